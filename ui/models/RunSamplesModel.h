#pragma once

#include "core/store/StoreTypes.h"
#include "core/telemetry/Events.h"

#include <QByteArray>
#include <QImage>
#include <QObject>
#include <QPointer>
#include <QString>
#include <QTimer>

#include <cstdint>
#include <deque>
#include <list>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace parallax {

class RunStore;
class StoreWatcher;

// The images one run drew while it trained ([samples], SampleEvent rows of the store's "samples"
// table), by step, read on the store watcher's thread. What it holds is bounded by what is shown,
// not by the length of the run:
//   - every row of every step, without its PNG (step, index, seed, size, prompt: a few bytes each);
//   - the PNG files (base64 decoded off the GUI thread) of the kHeldSteps steps whose images were
//     asked for last; an image of another step is read from the store when it is asked for
//     (image() is null meanwhile, isReading() says so, and imagesRead() says when it is in);
//   - the decoded images of the kCachedSteps steps asked for last.
//
// While the store changes and the run has not ended, the rows from its newest known step on are
// read again at most every kRefreshMs (the newest step again, since its images may come in
// several writes; a step whose rows changed is read again when next asked for); an ended run's
// rows are final once read after its end. Every read carries the generation of setRun(), so an
// answer about a run no longer chosen is dropped.
class RunSamplesModel : public QObject {
    Q_OBJECT
public:
    static constexpr int kRefreshMs = 500;
    static constexpr size_t kCachedSteps = 4;
    static constexpr size_t kHeldSteps = 8;

    // A step's PNG files by index (an empty one: the stored text was not base64).
    using StepPngs = std::map<int64_t, QByteArray>;

    // One read of a run: its record's end and length, samples.every of its spec, and its rows of
    // steps above `after` (by step, then index), without their PNG files (SampleEvent::png empty).
    struct Read {
        bool found = false;
        bool ended = false;
        int64_t stepsTotal = 0;
        int64_t samplesEvery = -1; // -1: the spec is missing or cannot be read
        std::vector<SampleEvent> rows;
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
    // The images of `step` by index (empty when it has none), without their PNG files.
    const std::vector<SampleEvent>& samplesAt(int64_t step) const;
    // The newest step at or below `step` with images; none when there is none.
    std::optional<int64_t> nearestStep(int64_t step) const;
    // The image of (step, index), decoded now or kept from before; a null image when there is no
    // such row, its bytes are not an image, or they are being read (then imagesRead() follows).
    QImage image(int64_t step, int64_t index);
    // The PNG files of `step` are being read from the store.
    bool isReading(int64_t step) const;
    // Steps whose decoded images are kept, the one asked for last first.
    std::vector<int64_t> cachedSteps() const;
    // Steps whose PNG files are held, the one asked for last first, and those files' bytes.
    std::vector<int64_t> heldSteps() const;
    size_t heldPngBytes() const;

    // What a read of `run` finds on the store's thread: the rows of steps above `after`.
    static Read read(const RunStore& store, qint64 run, int64_t after, bool withSpec);
    // The PNG files of `steps` of `run`, on the store's thread.
    static std::map<int64_t, StepPngs> readPngs(const RunStore& store, qint64 run, const std::vector<int64_t>& steps);

signals:
    // steps(), samplesAt() or hasSamples() changed.
    void changed();
    // PNG files asked for by image() came in: image() gives their images now.
    void imagesRead();
    void failed(const QString& message);

private:
    void apply(uint64_t generation, Read r);
    void onPolled();
    // Drops what is kept of `step` (its rows changed).
    void forget(int64_t step);
    // Asks for the PNG files of `step`, read with the others asked for once the read in flight is in.
    void wantPngs(int64_t step);
    void readWantedPngs();
    void holdPngs(uint64_t generation, std::map<int64_t, StepPngs> read);

    QPointer<StoreWatcher> m_watcher;
    qint64 m_run = 0;
    uint64_t m_generation = 0;
    bool m_read = false;
    bool m_ended = false;
    int64_t m_stepsTotal = 0;
    int64_t m_samplesEvery = -1;
    std::map<int64_t, std::vector<SampleEvent>> m_rows;
    bool m_inFlight = false;
    bool m_again = false;
    // PNG files by step, the step asked for last at the front (at most kHeldSteps).
    std::list<std::pair<int64_t, StepPngs>> m_held;
    // Steps whose files are asked for and not yet being read, the newest wish last (at most
    // kHeldSteps: older wishes are no longer on screen), and those of the read in flight whose
    // answer is still wanted (not those of another run, nor of a step whose rows changed since).
    std::deque<int64_t> m_pngWishes;
    std::vector<int64_t> m_pngReading;
    bool m_pngInFlight = false;
    // Decoded images by step, the step asked for last at the front.
    std::list<std::pair<int64_t, std::map<int64_t, QImage>>> m_cache;
    QTimer m_refreshTimer;
};

} // namespace parallax
