#pragma once

#include "core/store/StoreTypes.h"

#include <QByteArray>
#include <QImage>
#include <QObject>
#include <QPointer>
#include <QString>
#include <QTimer>

#include <cstdint>
#include <list>
#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace parallax {

class RunStore;
class StoreWatcher;

// The images one run drew while it trained ([samples], SampleEvent rows of the store's "samples"
// table), by step, read on the store watcher's thread. Each row keeps its PNG bytes as stored
// (base64 decoded off the GUI thread); a row's image is decoded when it is asked for, and only the
// decoded images of the kCachedSteps steps asked for last are kept, so that a long run's history
// costs its PNG bytes, not its pixels.
//
// While the store changes and the run has not ended, the rows from its newest known step on are
// read again at most every kRefreshMs (the newest step again, since its images may come in
// several writes); an ended run's rows are final once read after its end. Every read carries the
// generation of setRun(), so an answer about a run no longer chosen is dropped.
class RunSamplesModel : public QObject {
    Q_OBJECT
public:
    static constexpr int kRefreshMs = 500;
    static constexpr size_t kCachedSteps = 4;

    // One image as stored: its place, how it was drawn, and its PNG file.
    struct Sample {
        int64_t step = 0;
        int64_t index = 0;
        int64_t seed = 0;
        int64_t width = 0;
        int64_t height = 0;
        int64_t steps = 0; // denoising steps
        QString prompt;
        QByteArray png; // empty: the stored text was not base64
    };

    // One read of a run: its record's end and length, samples.every of its spec, and its rows of
    // steps above `after` (by step, then index).
    struct Read {
        bool found = false;
        bool ended = false;
        int64_t stepsTotal = 0;
        int64_t samplesEvery = -1; // -1: the spec is missing or cannot be read
        std::vector<Sample> rows;
    };

    explicit RunSamplesModel(StoreWatcher* watcher, QObject* parent = nullptr);

    // Forgets the previous run and starts reading `run` (0: none).
    void setRun(qint64 run);
    qint64 run() const { return m_run; }
    // Reads the rows from the newest known step on now (once more after a read in flight).
    void refresh();

    // Whether the first answer for the chosen run is in.
    bool isRead() const { return m_read; }
    // The run has samples, or its spec asks for them (samples.every > 0).
    bool hasSamples() const { return !m_rows.empty() || m_samplesEvery > 0; }
    int64_t samplesEvery() const { return m_samplesEvery; }
    int64_t stepsTotal() const { return m_stepsTotal; }
    bool ended() const { return m_ended; }

    // Steps with images, ascending.
    std::vector<int64_t> steps() const;
    // The images of `step` by index (empty when it has none).
    const std::vector<Sample>& samplesAt(int64_t step) const;
    // The newest step at or below `step` with images; none when there is none.
    std::optional<int64_t> nearestStep(int64_t step) const;
    // The image of (step, index), decoded now or kept from before; a null image when there is no
    // such row or its bytes are not an image.
    QImage image(int64_t step, int64_t index);
    // Steps whose decoded images are kept (for tests: the memory stays bounded).
    std::vector<int64_t> cachedSteps() const;

    // What a read of `run` finds on the store's thread: the rows of steps above `after`.
    static Read read(const RunStore& store, qint64 run, int64_t after, bool withSpec);

signals:
    // steps(), samplesAt() or hasSamples() changed.
    void changed();
    void failed(const QString& message);

private:
    void apply(uint64_t generation, Read r);
    void onPolled();

    QPointer<StoreWatcher> m_watcher;
    qint64 m_run = 0;
    uint64_t m_generation = 0;
    bool m_read = false;
    bool m_ended = false;
    int64_t m_stepsTotal = 0;
    int64_t m_samplesEvery = -1;
    std::map<int64_t, std::vector<Sample>> m_rows;
    bool m_inFlight = false;
    bool m_again = false;
    // Decoded images by step, the step asked for last at the front.
    std::list<std::pair<int64_t, std::map<int64_t, QImage>>> m_cache;
    QTimer m_refreshTimer;
};

} // namespace parallax
