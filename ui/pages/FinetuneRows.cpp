#include "ui/pages/FinetuneRows.h"

#include "core/spec/SpecValidator.h"
#include "ui/models/ConversationDatasetModel.h"
#include "ui/models/ModelSourceSummary.h"
#include "ui/models/SpecFormModel.h"

#include <QLabel>
#include <QVBoxLayout>

namespace parallax {

namespace {

// Not spec fields: rows of their own beneath model.from and data.path.
const QString kModelSourceKey = QStringLiteral("console.model_source");
const QString kConversationsKey = QStringLiteral("console.conversations");

QLabel* selectableLabel(const QString& name, QWidget* parent) {
    auto* label = new QLabel(parent);
    label->setObjectName(name);
    label->setWordWrap(true);
    label->setTextInteractionFlags(Qt::TextSelectableByMouse);
    return label;
}

} // namespace

FinetuneRows::FinetuneRows(SpecFormModel* model, QObject* parent)
    : QObject(parent), m_form(model), m_conversations(new ConversationDatasetModel(this)) {
    m_model = selectableLabel(QStringLiteral("modelSource.summary"), nullptr);
    m_datasetRow = new QWidget;
    auto* rows = new QVBoxLayout(m_datasetRow);
    rows->setContentsMargins(0, 0, 0, 0);
    m_dataset = selectableLabel(QStringLiteral("conversations.summary"), m_datasetRow);
    m_preview = selectableLabel(QStringLiteral("conversations.preview"), m_datasetRow);
    m_preview->setTextFormat(Qt::RichText);
    m_preview->setFrameShape(QFrame::StyledPanel);
    rows->addWidget(m_dataset);
    rows->addWidget(m_preview);

    connect(m_conversations, &ConversationDatasetModel::changed, this, &FinetuneRows::showDataset);
    // Each validation (debounced edits, a spec loaded) brings the estimates the model's lines show.
    const auto follow = [this] {
        showModel();
        m_conversations->setSpec(m_form->spec());
    };
    connect(m_form, &SpecFormModel::validated, this, follow);
    follow();
}

std::vector<SpecForm::Placement> FinetuneRows::placements() const {
    return {{QStringLiteral("model.from"), m_model, kModelSourceKey, &ModelSourceSummary::applies},
            {QStringLiteral("data.path"), m_datasetRow, kConversationsKey, &ConversationDatasetModel::applies}};
}

std::vector<SpecIssue> FinetuneRows::issues() const {
    return m_conversations->issues();
}

void FinetuneRows::showModel() {
    const std::optional<Estimates>& estimates = m_form->estimates();
    m_model->setText(ModelSourceSummary::lines(m_form->spec(), estimates ? &*estimates : nullptr, m_form->estimateError())
                         .join(QLatin1Char('\n')));
}

void FinetuneRows::showDataset() {
    m_dataset->setText(m_conversations->summaryLines().join(QLatin1Char('\n')));
    const QString preview = m_conversations->previewHtml();
    m_preview->setText(preview);
    m_preview->setVisible(!preview.isEmpty());
    emit issuesChanged();
}

} // namespace parallax
