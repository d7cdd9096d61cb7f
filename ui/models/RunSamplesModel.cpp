#include "ui/models/RunSamplesModel.h"

#include "core/spec/SpecIO.h"
#include "core/store/RunStore.h"
#include "core/util/Base64.h"
#include "ui/models/StoreWatcher.h"

#include <algorithm>
#include <exception>
#include <iterator>
#include <limits>
#include <string>

namespace parallax {

namespace {

// The fields a listing of the rows leaves out: the PNG, and those stored after it (reaching them
// would read the PNG too).
const std::vector<std::string>& listedWithout() {
    static const std::vector<std::string> fields = {"png", "ms", "t"};
    return fields;
}

bool sameRows(const std::vector<SampleEvent>& a, const std::vector<SampleEvent>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
        const SampleEvent& x = a[i];
        const SampleEvent& y = b[i];
        if (x.index != y.index || x.seed != y.seed || x.width != y.width || x.height != y.height ||
            x.steps != y.steps || x.prompt != y.prompt)
            return false;
    }
    return true;
}

template <class Entries>
auto findStep(Entries& entries, int64_t step) {
    return std::find_if(entries.begin(), entries.end(), [step](const auto& e) { return e.first == step; });
}

} // namespace

RunSamplesModel::RunSamplesModel(StoreWatcher* watcher, QObject* parent) : QObject(parent), m_watcher(watcher) {
    m_refreshTimer.setSingleShot(true);
    m_refreshTimer.setInterval(kRefreshMs);
    connect(&m_refreshTimer, &QTimer::timeout, this, &RunSamplesModel::refresh);
    if (m_watcher) connect(m_watcher, &StoreWatcher::polled, this, &RunSamplesModel::onPolled);
}

RunSamplesModel::Read RunSamplesModel::read(const RunStore& store, qint64 run, int64_t after, bool withSpec) {
    Read r;
    // The record first: a run seen ended has written all its rows before.
    const std::optional<RunRecord> record = store.run(run);
    if (!record) return r;
    r.found = true;
    r.ended = isTerminal(record->state);
    r.stepsTotal = record->steps_total;
    if (withSpec && !record->spec_toml.empty()) {
        try {
            r.samplesEvery = parseSpec(record->spec_toml, "run " + std::to_string(run) + " spec").samples.every;
        } catch (const std::exception&) {
            r.samplesEvery = -1; // its rows, if any, still say it has samples
        }
    }
    r.rows = store.eventsWithout<SampleEvent>(run, listedWithout(), after);
    return r;
}

std::map<int64_t, RunSamplesModel::StepPngs> RunSamplesModel::readPngs(const RunStore& store, qint64 run,
                                                                       const std::vector<int64_t>& steps) {
    std::map<int64_t, StepPngs> out;
    for (int64_t step : steps) {
        StepPngs& pngs = out[step];
        for (const SampleEvent& e : store.eventsBetween<SampleEvent>(run, step, step + 1)) {
            QByteArray& bytes = pngs[e.index];
            if (const std::optional<std::vector<uint8_t>> decoded = base64Decode(e.png))
                bytes = QByteArray(reinterpret_cast<const char*>(decoded->data()), qsizetype(decoded->size()));
        }
    }
    return out;
}

void RunSamplesModel::setRun(qint64 run) {
    if (run == m_run) return;
    m_run = run;
    ++m_generation;
    m_read = false;
    m_ended = false;
    m_stepsTotal = 0;
    m_samplesEvery = -1;
    m_rows.clear();
    m_cache.clear();
    m_held.clear();
    m_pngWishes.clear();
    m_pngReading.clear();
    m_refreshTimer.stop();
    emit changed();
    if (run > 0) refresh();
}

void RunSamplesModel::refresh() {
    if (!m_watcher || m_run <= 0) return;
    if (m_inFlight) {
        m_again = true;
        return;
    }
    m_inFlight = true;
    m_again = false;
    const qint64 run = m_run;
    const uint64_t generation = m_generation;
    // The newest known step is read again: its images may have come in several writes.
    const int64_t after = m_rows.empty() ? std::numeric_limits<int64_t>::min() : m_rows.rbegin()->first - 1;
    const bool withSpec = !m_read;
    m_watcher->read<Read>(
        this, [run, after, withSpec](const RunStore& store) { return read(store, run, after, withSpec); },
        [this, generation](Read r) { apply(generation, std::move(r)); },
        [this, generation](const QString& message) {
            m_inFlight = false;
            if (generation != m_generation) {
                refresh(); // the run chosen meanwhile has not been read yet
                return;
            }
            emit failed(message);
        });
}

void RunSamplesModel::apply(uint64_t generation, Read r) {
    m_inFlight = false;
    if (generation != m_generation) {
        refresh();
        return;
    }
    if (m_again) QTimer::singleShot(0, this, &RunSamplesModel::refresh);
    bool changedAny = !m_read || r.ended != m_ended || r.stepsTotal != m_stepsTotal;
    if (!m_read) m_samplesEvery = r.samplesEvery;
    m_read = true;
    m_ended = r.ended;
    m_stepsTotal = r.stepsTotal;
    std::map<int64_t, std::vector<SampleEvent>> fresh;
    for (SampleEvent& s : r.rows) fresh[s.step].push_back(std::move(s));
    for (auto& [step, rows] : fresh) {
        auto known = m_rows.find(step);
        if (known != m_rows.end() && sameRows(known->second, rows)) continue;
        forget(step);
        m_rows[step] = std::move(rows);
        changedAny = true;
    }
    if (changedAny) emit changed();
}

void RunSamplesModel::forget(int64_t step) {
    m_cache.remove_if([step](const auto& entry) { return entry.first == step; });
    m_held.remove_if([step](const auto& entry) { return entry.first == step; });
    // Files read before the change may lack its new rows.
    m_pngReading.erase(std::remove(m_pngReading.begin(), m_pngReading.end(), step), m_pngReading.end());
}

void RunSamplesModel::onPolled() {
    if (m_run <= 0 || !m_read || m_ended || m_refreshTimer.isActive()) return;
    m_refreshTimer.start();
}

std::vector<int64_t> RunSamplesModel::steps() const {
    std::vector<int64_t> out;
    out.reserve(m_rows.size());
    for (const auto& entry : m_rows) out.push_back(entry.first);
    return out;
}

const std::vector<SampleEvent>& RunSamplesModel::samplesAt(int64_t step) const {
    static const std::vector<SampleEvent> none;
    const auto it = m_rows.find(step);
    return it == m_rows.end() ? none : it->second;
}

std::optional<int64_t> RunSamplesModel::nearestStep(int64_t step) const {
    auto it = m_rows.upper_bound(step);
    if (it == m_rows.begin()) return std::nullopt;
    return std::prev(it)->first;
}

QImage RunSamplesModel::image(int64_t step, int64_t index) {
    const std::vector<SampleEvent>& rows = samplesAt(step);
    if (std::none_of(rows.begin(), rows.end(), [index](const SampleEvent& s) { return s.index == index; })) return {};
    auto entry = findStep(m_cache, step);
    if (entry != m_cache.end()) {
        const auto found = entry->second.find(index);
        if (found != entry->second.end()) {
            m_cache.splice(m_cache.begin(), m_cache, entry);
            return found->second;
        }
    }
    auto held = findStep(m_held, step);
    if (held == m_held.end()) {
        wantPngs(step);
        return {};
    }
    m_held.splice(m_held.begin(), m_held, held);
    if (entry == m_cache.end()) {
        m_cache.emplace_front(step, std::map<int64_t, QImage>{});
        while (m_cache.size() > kCachedSteps) m_cache.pop_back();
    } else {
        m_cache.splice(m_cache.begin(), m_cache, entry);
    }
    const StepPngs& pngs = m_held.front().second;
    const auto bytes = pngs.find(index);
    const QImage decoded = bytes == pngs.end() ? QImage() : QImage::fromData(bytes->second, "PNG");
    m_cache.front().second[index] = decoded;
    return decoded;
}

bool RunSamplesModel::isReading(int64_t step) const {
    return std::find(m_pngWishes.begin(), m_pngWishes.end(), step) != m_pngWishes.end() ||
           std::find(m_pngReading.begin(), m_pngReading.end(), step) != m_pngReading.end();
}

void RunSamplesModel::wantPngs(int64_t step) {
    if (isReading(step)) return;
    m_pngWishes.push_back(step);
    while (m_pngWishes.size() > kHeldSteps) m_pngWishes.pop_front();
    readWantedPngs();
}

void RunSamplesModel::readWantedPngs() {
    if (!m_watcher || m_run <= 0 || m_pngInFlight || m_pngWishes.empty()) return;
    m_pngInFlight = true;
    m_pngReading.assign(m_pngWishes.begin(), m_pngWishes.end());
    m_pngWishes.clear();
    const qint64 run = m_run;
    const uint64_t generation = m_generation;
    const std::vector<int64_t> steps = m_pngReading;
    m_watcher->read<std::map<int64_t, StepPngs>>(
        this, [run, steps](const RunStore& store) { return readPngs(store, run, steps); },
        [this, generation](std::map<int64_t, StepPngs> read) { holdPngs(generation, std::move(read)); },
        [this, generation](const QString& message) {
            m_pngInFlight = false;
            if (generation == m_generation) {
                m_pngReading.clear();
                emit failed(message);
            }
            readWantedPngs();
        });
}

void RunSamplesModel::holdPngs(uint64_t generation, std::map<int64_t, StepPngs> read) {
    m_pngInFlight = false;
    if (generation == m_generation) {
        for (auto& [step, pngs] : read) {
            if (std::find(m_pngReading.begin(), m_pngReading.end(), step) == m_pngReading.end()) continue;
            m_held.remove_if([step = step](const auto& entry) { return entry.first == step; });
            m_held.emplace_front(step, std::move(pngs));
        }
        while (m_held.size() > kHeldSteps) m_held.pop_back();
        m_pngReading.clear();
        emit imagesRead();
    }
    readWantedPngs();
}

std::vector<int64_t> RunSamplesModel::cachedSteps() const {
    std::vector<int64_t> out;
    for (const auto& entry : m_cache) out.push_back(entry.first);
    return out;
}

std::vector<int64_t> RunSamplesModel::heldSteps() const {
    std::vector<int64_t> out;
    for (const auto& entry : m_held) out.push_back(entry.first);
    return out;
}

size_t RunSamplesModel::heldPngBytes() const {
    size_t bytes = 0;
    for (const auto& entry : m_held)
        for (const auto& png : entry.second) bytes += size_t(png.second.size());
    return bytes;
}

} // namespace parallax
