#include "ui/models/CaptionDatasetModel.h"

#include "core/spec/ModelKinds.h"

#if PARALLAX_WITH_CAPTIONS
#include "core/captions/CaptionDatasetSummary.h"
#endif

#include <QDir>
#include <QThread>

#include <memory>

namespace parallax {

namespace {

QString q(const std::string& s) {
    return QString::fromStdString(s);
}

// What one read found; written on the reading thread, handed over when it ends.
struct Reading {
    bool shards = false;
    QString error, bucketText, folder;
    int64_t samples = 0, cached = 0;
    bool madeForThis = false;
    std::map<std::pair<int, int>, int64_t> buckets;
};

// A folder of *.safetensors is latent shards that a run reads as they are (as the worker decides).
bool holdsLatentShards(const QString& path) {
    const QDir dir(path);
    return dir.exists() && !dir.entryList({QStringLiteral("*.safetensors")}, QDir::Files).isEmpty();
}

} // namespace

CaptionDatasetModel::CaptionDatasetModel(QObject* parent) : QObject(parent) {
    m_debounce.setSingleShot(true);
    m_debounce.setInterval(kDebounceMs);
    connect(&m_debounce, &QTimer::timeout, this, &CaptionDatasetModel::read);
}

bool CaptionDatasetModel::applies(const RunSpec& spec) {
#if PARALLAX_WITH_CAPTIONS
    const ModelKindInfo* kind = modelKindInfo(spec.model.kind);
    return kind != nullptr && readsLatents(*kind) && !spec.model.from.empty() && spec.data.kind == DataKind::Latents &&
           !spec.data.path.empty();
#else
    (void)spec;
    return false;
#endif
}

void CaptionDatasetModel::setSpec(const RunSpec& spec) {
    const bool applies = CaptionDatasetModel::applies(spec);
    const Key key{spec.data.path, spec.model.from, spec.data.max_pixels};
    if (applies == m_applies && (!applies || key == m_key)) return;
    m_applies = applies;
    m_key = key;
    m_known = false;
    ++m_generation; // what a read under way finds is of another spec
    m_reading = applies;
    if (applies) m_debounce.start();
    else m_debounce.stop();
    emit changed();
}

void CaptionDatasetModel::refresh() {
    if (!m_applies) return;
    m_debounce.stop();
    read();
}

void CaptionDatasetModel::read() {
    const uint64_t generation = ++m_generation;
    m_reading = true;
    auto result = std::make_shared<Reading>();
    QThread* thread = QThread::create([result, key = m_key] {
        result->shards = holdsLatentShards(q(key.path));
#if PARALLAX_WITH_CAPTIONS
        if (result->shards) return;
        const CaptionDatasetSummary s = summarizeCaptionDataset(key.path, key.from, key.maxPixels);
        result->error = q(s.error);
        if (!s.ok()) return;
        result->samples = s.samples;
        for (const auto& [bucket, count] : s.buckets) result->buckets[{bucket.width, bucket.height}] = count;
        result->bucketText = q(bucketSummaryText(s));
        result->cached = s.cache.made_for_this ? s.cache.samples_done : 0;
        result->madeForThis = s.cache.made_for_this;
        result->folder = q(s.cache.folder);
#endif
    });
    thread->setObjectName(QStringLiteral("CaptionDataset"));
    // Queued onto this object's thread, and dropped once this object is gone.
    connect(thread, &QThread::finished, this, [this, result, generation] {
        if (generation != m_generation) return; // the spec changed since: another read follows
        m_reading = false;
        m_known = true;
        m_shards = result->shards;
        m_error = result->error;
        m_bucketText = result->bucketText;
        m_samples = result->samples;
        m_buckets = result->buckets;
        m_cached = result->cached;
        m_madeForThis = result->madeForThis;
        m_folder = result->folder;
        emit changed();
    });
    connect(thread, &QThread::finished, thread, &QObject::deleteLater);
    thread->start();
    emit changed();
}

bool CaptionDatasetModel::cacheComplete() const {
    return m_known && !m_shards && m_error.isEmpty() && m_madeForThis && m_cached == m_samples;
}

QString CaptionDatasetModel::datasetText() const {
    if (!m_applies) return {};
    if (!m_known) return tr("Reading the dataset's images…");
    if (m_shards) return tr("data.path holds latent shards: a run reads them as they are");
    if (!m_error.isEmpty()) return m_error;
    return m_bucketText;
}

QString CaptionDatasetModel::cacheText() const {
    if (!m_known || m_shards || !m_error.isEmpty()) return {};
    if (cacheComplete()) return tr("cache: complete");
    return tr("cache: %1 of %2 encoded").arg(m_cached).arg(m_samples);
}

std::vector<SpecIssue> CaptionDatasetModel::issues() const {
    if (!m_known || m_shards || cacheComplete()) return {};
    const std::vector<std::string> related = {"model.from", "data.max_pixels"};
    if (!m_error.isEmpty())
        return {{"data.path", "data.path: " + m_error.toStdString() + " (a run of this spec fails reading it)", true,
                 related}};
    return {{"data.path",
             tr("data.path: a run reads this dataset through its latent cache, which holds %1 of %2 samples made for "
                "model.from and data.max_pixels; until it is complete every step runs the VAE and the text encoder: "
                "use Cache now (or parallax-cli cache SPEC) once for faster steps")
                 .arg(m_cached)
                 .arg(m_samples)
                 .toStdString(),
             true, related}};
}

} // namespace parallax
