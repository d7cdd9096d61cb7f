#pragma once

#include "core/spec/RunSpec.h"
#include "core/spec/SpecValidator.h"

#include <QObject>
#include <QString>
#include <QTimer>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace parallax {

// The image-caption dataset of a spec that trains a latent model (qwen_image) on it through its
// latent cache: its samples, their aspect buckets and how much of the cache made for the spec's
// pipeline folder and data.max_pixels is there (core/captions/CaptionDatasetSummary), read off the
// GUI thread (every image's header is read) whenever the dataset, the pipeline or the budget
// changes, and again on refresh() (after caching). Without the image decoders in this build it
// applies to no spec.
class CaptionDatasetModel : public QObject {
    Q_OBJECT
public:
    static constexpr int kDebounceMs = 300;

    explicit CaptionDatasetModel(QObject* parent = nullptr);

    // A latent model (qwen_image) from a pipeline folder (model.from) reading data.kind = "latents"
    // from data.path: the dataset may be images with captions, which a run reads through the cache.
    static bool applies(const RunSpec& spec);

    // Reads the dataset of `spec` (after a short quiet period) when its path, pipeline folder or
    // pixel budget differs from the one read; nothing when the spec does not apply.
    void setSpec(const RunSpec& spec);
    // Reads it again now (the cache or the dataset changed on disk).
    void refresh();

    bool appliesNow() const { return m_applies; }
    bool isReading() const { return m_reading; }
    // What was read for the spec as it is now.
    bool isKnown() const { return m_known; }
    // data.path holds latent shards already: a run reads them as they are.
    bool holdsShards() const { return m_shards; }
    QString error() const { return m_error; }
    int64_t samples() const { return m_samples; }
    const std::map<std::pair<int, int>, int64_t>& buckets() const { return m_buckets; }
    int64_t samplesCached() const { return m_cached; }
    bool cacheMadeForThis() const { return m_madeForThis; }
    bool cacheComplete() const;
    QString cacheFolder() const { return m_folder; }

    // "70 images in 3 buckets: 48 x 32 (24), 32 x 32 (23), 16 x 48 (23)", the dataset's problem,
    // or what is being done.
    QString datasetText() const;
    // "cache: 32 of 70 encoded", "cache: complete"; empty while unknown or for shards or a problem.
    QString cacheText() const;
    // A warning while a run of the spec would be refused (the cache is not complete, the dataset
    // cannot be read), with the fix; none otherwise.
    std::vector<SpecIssue> issues() const;

signals:
    // What is known of the dataset changed (a read started or ended).
    void changed();

private:
    struct Key {
        std::string path, from;
        int64_t maxPixels = 0;
        bool operator==(const Key& o) const { return path == o.path && from == o.from && maxPixels == o.maxPixels; }
    };
    void read();

    QTimer m_debounce;
    Key m_key;
    bool m_applies = false;
    bool m_reading = false;
    bool m_known = false;
    uint64_t m_generation = 0;

    bool m_shards = false;
    QString m_error;
    QString m_bucketText;
    int64_t m_samples = 0;
    std::map<std::pair<int, int>, int64_t> m_buckets;
    int64_t m_cached = 0;
    bool m_madeForThis = false;
    QString m_folder;
};

} // namespace parallax
