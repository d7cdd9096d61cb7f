#include "ui/models/ConversationDatasetModel.h"

#include "core/spec/ModelDims.h"
#include "core/spec/ModelKinds.h"

#if PARALLAX_WITH_CONVERSATIONS
#include "core/conversations/ConversationDatasetSummary.h"
#endif

#include <QThread>

namespace parallax {

#if !PARALLAX_WITH_CONVERSATIONS
struct ConversationDatasetSummary {};
#endif

namespace {

QString q(const std::string& s) {
    return QString::fromStdString(s);
}

// What a read of `spec`'s dataset for a model of `d` depends on.
std::string readKey(const RunSpec& spec, const ModelDims& d) {
    return spec.data.path + '\x1f' + spec.model.from + '\x1f' + std::to_string(spec.data.min_pixels) + '\x1f' +
           std::to_string(spec.data.max_pixels) + '\x1f' + std::to_string(d.seq_len) + '\x1f' +
           std::to_string(static_cast<int>(d.kind)) + '\x1f' + std::to_string(d.vocab);
}

} // namespace

ConversationDatasetModel::ConversationDatasetModel(QObject* parent) : QObject(parent) {
    m_debounce.setSingleShot(true);
    m_debounce.setInterval(kDebounceMs);
    connect(&m_debounce, &QTimer::timeout, this, &ConversationDatasetModel::read);
}

ConversationDatasetModel::~ConversationDatasetModel() = default;

bool ConversationDatasetModel::applies(const RunSpec& spec) {
#if PARALLAX_WITH_CONVERSATIONS
    const ModelKindInfo* kind = modelKindInfo(spec.model.kind);
    return kind != nullptr && publishedModel(*kind) && !readsLatents(*kind) &&
           spec.data.kind == DataKind::Conversations && !spec.data.path.empty();
#else
    (void)spec;
    return false;
#endif
}

void ConversationDatasetModel::setSpec(const RunSpec& spec) {
    m_spec = spec;
    bool applies = ConversationDatasetModel::applies(spec);
    if (applies) {
        try {
            m_dims = resolveModel(spec);
        } catch (const std::exception&) {
            applies = false; // the form shows why the model cannot be resolved
        }
    }
    const std::string key = applies ? readKey(spec, m_dims) : std::string();
    if (applies == m_applies && key == m_key) {
        emit changed(); // the lines follow data.on_truncate and on_bad_sample
        return;
    }
    m_applies = applies;
    m_key = key;
    m_known = false;
    m_summary.reset();
    ++m_generation; // what a read under way finds is of another spec
    if (applies) m_debounce.start();
    else m_debounce.stop();
    emit changed();
}

void ConversationDatasetModel::refresh() {
    if (!m_applies) return;
    m_debounce.stop();
    read();
}

void ConversationDatasetModel::read() {
#if PARALLAX_WITH_CONVERSATIONS
    const uint64_t generation = ++m_generation;
    auto result = std::make_shared<ConversationDatasetSummary>();
    QThread* thread = QThread::create([result, data = m_spec.data, dims = m_dims, tokenizer = m_spec.model.from] {
        *result = summarizeConversations(data, dims, tokenizer);
    });
    thread->setObjectName(QStringLiteral("ConversationDataset"));
    // Queued onto this object's thread, and dropped once this object is gone.
    connect(thread, &QThread::finished, this, [this, result, generation] {
        if (generation != m_generation) return; // the spec changed since: another read follows
        m_known = true;
        m_summary = result;
        emit changed();
    });
    connect(thread, &QThread::finished, thread, &QObject::deleteLater);
    thread->start();
#endif
    emit changed();
}

QStringList ConversationDatasetModel::summaryLines() const {
    if (!m_applies) return {};
    if (!m_known) return {tr("Reading the dataset…")};
    QStringList lines;
#if PARALLAX_WITH_CONVERSATIONS
    for (const std::string& line : conversationSummaryLines(*m_summary, m_spec.data, m_dims)) lines << q(line);
#endif
    return lines;
}

QString ConversationDatasetModel::previewHtml() const {
    QString html;
#if PARALLAX_WITH_CONVERSATIONS
    if (!m_known || !m_summary->ok() || m_summary->preview.empty()) return {};
    html = tr("<p>%1, as the model reads it; <span style=\"background:#c8e6c9\">highlighted</span>: the tokens it "
              "learns to predict</p>")
               .arg(q(m_summary->previewSource).toHtmlEscaped());
    html += QStringLiteral("<pre style=\"white-space:pre-wrap\">");
    for (const ConversationDatasetSummary::Span& span : m_summary->preview) {
        const QString text = q(span.text).toHtmlEscaped();
        html += span.trained ? QStringLiteral("<span style=\"background:#c8e6c9\">%1</span>").arg(text) : text;
    }
    html += QStringLiteral("</pre>");
#endif
    return html;
}

std::vector<SpecIssue> ConversationDatasetModel::issues() const {
#if PARALLAX_WITH_CONVERSATIONS
    if (!m_known || !m_summary->ok()) {
        if (m_known)
            return {{"data.path", "data.path: " + m_summary->error + " (a run of this spec fails reading it)", true,
                     {"model.from"}}};
        return {};
    }
    const std::string refusal = m_summary->refusal(m_spec.data);
    if (refusal.empty()) return {};
    return {{"data.path", "data.path: " + refusal, true, {"model.seq_len", "data.max_pixels", "data.on_truncate"}}};
#else
    return {};
#endif
}

} // namespace parallax
