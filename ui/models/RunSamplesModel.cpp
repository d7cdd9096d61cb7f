#include "ui/models/RunSamplesModel.h"

#include "core/spec/SpecIO.h"
#include "core/store/RunStore.h"
#include "core/telemetry/Events.h"
#include "core/util/Base64.h"
#include "ui/models/StoreWatcher.h"

#include <algorithm>
#include <exception>
#include <iterator>
#include <limits>
#include <string>

namespace parallax {

namespace {

RunSamplesModel::Sample fromEvent(const SampleEvent& e) {
    RunSamplesModel::Sample s;
    s.step = e.step;
    s.index = e.index;
    s.seed = e.seed;
    s.width = e.width;
    s.height = e.height;
    s.steps = e.steps;
    s.prompt = QString::fromStdString(e.prompt);
    if (const std::optional<std::vector<uint8_t>> bytes = base64Decode(e.png))
        s.png = QByteArray(reinterpret_cast<const char*>(bytes->data()), qsizetype(bytes->size()));
    return s;
}

bool sameRows(const std::vector<RunSamplesModel::Sample>& a, const std::vector<RunSamplesModel::Sample>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (a[i].index != b[i].index || a[i].png != b[i].png || a[i].prompt != b[i].prompt) return false;
    return true;
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
    for (const SampleEvent& e : store.events<SampleEvent>(run, after)) r.rows.push_back(fromEvent(e));
    return r;
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
    std::map<int64_t, std::vector<Sample>> fresh;
    for (Sample& s : r.rows) fresh[s.step].push_back(std::move(s));
    for (auto& [step, rows] : fresh) {
        auto known = m_rows.find(step);
        if (known != m_rows.end() && sameRows(known->second, rows)) continue;
        m_cache.remove_if([step = step](const auto& entry) { return entry.first == step; });
        m_rows[step] = std::move(rows);
        changedAny = true;
    }
    if (changedAny) emit changed();
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

const std::vector<RunSamplesModel::Sample>& RunSamplesModel::samplesAt(int64_t step) const {
    static const std::vector<Sample> none;
    const auto it = m_rows.find(step);
    return it == m_rows.end() ? none : it->second;
}

std::optional<int64_t> RunSamplesModel::nearestStep(int64_t step) const {
    auto it = m_rows.upper_bound(step);
    if (it == m_rows.begin()) return std::nullopt;
    return std::prev(it)->first;
}

QImage RunSamplesModel::image(int64_t step, int64_t index) {
    const std::vector<Sample>& rows = samplesAt(step);
    const Sample* sample = nullptr;
    for (const Sample& s : rows)
        if (s.index == index) sample = &s;
    if (!sample) return {};
    auto entry = std::find_if(m_cache.begin(), m_cache.end(), [step](const auto& e) { return e.first == step; });
    if (entry == m_cache.end()) {
        m_cache.emplace_front(step, std::map<int64_t, QImage>{});
        while (m_cache.size() > kCachedSteps) m_cache.pop_back();
    } else if (entry != m_cache.begin()) {
        m_cache.splice(m_cache.begin(), m_cache, entry);
    }
    std::map<int64_t, QImage>& images = m_cache.front().second;
    const auto found = images.find(index);
    if (found != images.end()) return found->second;
    const QImage decoded = QImage::fromData(sample->png, "PNG");
    images[index] = decoded;
    return decoded;
}

std::vector<int64_t> RunSamplesModel::cachedSteps() const {
    std::vector<int64_t> out;
    for (const auto& entry : m_cache) out.push_back(entry.first);
    return out;
}

} // namespace parallax
