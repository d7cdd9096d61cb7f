#include "core/store/TelemetryThinning.h"

#include "core/store/RunStore.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>

namespace parallax {

namespace {

constexpr const char* kDeviceEvent = "device";
constexpr const char* kRankStepEvent = "rank_step";

// A mean of the values known (>= 0), each weighted by the samples its row stands for.
struct Mean {
    double sum = 0, weight = 0;
    void add(double v, int samples) {
        if (!(v >= 0)) return;
        sum += v * samples;
        weight += samples;
    }
    double value() const { return weight > 0 ? sum / weight : -1; }
};

struct Most {
    double value = -1;
    void add(double v) {
        if (v >= 0) value = std::max(value, v);
    }
};

struct Rollup {
    DeviceEvent newest;
    int samples = 0;
    Mean util, power, clock, cpu;
    Most mem, memTotal, temp, rss;

    void add(const DeviceEvent& e) {
        if (samples == 0 || e.t >= newest.t) newest = e;
        samples += std::max(1, e.samples);
        util.add(e.util, e.samples);
        power.add(e.power_w, e.samples);
        clock.add(e.sm_clock_mhz, e.samples);
        cpu.add(e.cpu_pct, e.samples);
        mem.add(e.mem_used);
        memTotal.add(e.mem_total);
        temp.add(e.temp_c);
        rss.add(e.rss);
    }
    DeviceEvent row() const {
        DeviceEvent r = newest;
        r.samples = samples;
        r.util = util.value();
        r.power_w = power.value();
        r.sm_clock_mhz = clock.value();
        r.cpu_pct = cpu.value();
        r.mem_used = mem.value;
        r.mem_total = memTotal.value;
        r.temp_c = temp.value;
        r.rss = rss.value;
        return r;
    }
};

// Replaces the rows of [from, until) but the kept ranks' with `rows` and moves the mark of `event`,
// in one transaction.
template <class E>
void replaceWindow(RunStore& store, int64_t run, const char* event, double from, double until,
                   const std::vector<int64_t>& keepRanks, const std::vector<E>& rows) {
    store.beginTransaction();
    try {
        store.deleteEventsBetween<E>(run, from, until, "rank", keepRanks);
        store.insertEvents(run, rows);
        store.setThinnedUntil(run, event, until);
        store.commit();
    } catch (...) {
        store.rollback();
        throw;
    }
}

// One window [from, until): its rows read, those of ranks not kept replaced by one per (rank,
// device), and the store's mark moved past it, in one transaction. False when it held no row.
bool thinWindow(RunStore& store, int64_t run, double from, double until, const std::set<int64_t>& kept,
                const std::vector<int64_t>& keepRanks, ThinningPass& pass) {
    const std::vector<DeviceEvent> raw = store.eventsBetween<DeviceEvent>(run, from, until);
    if (raw.empty()) return false;
    std::map<std::pair<int, int>, Rollup> groups;
    int64_t before = 0;
    for (const DeviceEvent& e : raw) {
        if (kept.count(e.rank)) continue;
        groups[{e.rank, e.device}].add(e);
        ++before;
    }
    std::vector<DeviceEvent> rows;
    rows.reserve(groups.size());
    for (const auto& [key, rollup] : groups) rows.push_back(rollup.row());
    replaceWindow(store, run, kDeviceEvent, from, until, keepRanks, rows);
    pass.rowsBefore += before;
    pass.rowsAfter += static_cast<int64_t>(rows.size());
    ++pass.windows;
    return true;
}

// Windows without a row a pass steps over at most (a run idle for a while).
constexpr int kEmptyWindowsPerPass = 10000;

// One window of steps [from, from + steps): false when a row of it came at or after `before`
// (the window is not old enough yet) or it has no row.
bool thinStepWindow(RunStore& store, int64_t run, int64_t from, int64_t steps, double before,
                    const std::set<int64_t>& kept, const std::vector<int64_t>& keepRanks, ThinningPass& pass,
                    bool* tooNew) {
    const std::vector<RankStepEvent> raw = store.eventsBetween<RankStepEvent>(run, from, from + steps);
    *tooNew = false;
    if (raw.empty()) return false;
    struct Sum {
        RankStepEvent first;
        double compute = 0, wait = 0;
        int n = 0;
    };
    std::map<int, Sum> ranks;
    int64_t before_ = 0;
    for (const RankStepEvent& e : raw) {
        if (e.t >= before) {
            *tooNew = true;
            return false;
        }
        if (kept.count(e.rank)) continue;
        Sum& sum = ranks[e.rank];
        if (sum.n == 0) sum.first = e;
        sum.compute += e.compute_ms;
        sum.wait += e.wait_ms;
        ++sum.n;
        ++before_;
    }
    std::vector<RankStepEvent> rows;
    for (const auto& [rank, sum] : ranks) {
        RankStepEvent r = sum.first;
        r.step = from;
        r.compute_ms = sum.compute / sum.n;
        r.wait_ms = sum.wait / sum.n;
        rows.push_back(r);
    }
    replaceWindow(store, run, kRankStepEvent, double(from), double(from + steps), keepRanks, rows);
    pass.rowsBefore += before_;
    pass.rowsAfter += static_cast<int64_t>(rows.size());
    ++pass.windows;
    return true;
}

} // namespace

ThinningPass thinRankSteps(RunStore& store, int64_t run, double before, const std::vector<int64_t>& keepRanks,
                           int64_t windowSteps, int maxWindows) {
    ThinningPass pass;
    if (windowSteps < 2) return pass;
    std::optional<double> from = store.thinnedUntil(run, kRankStepEvent);
    if (!from) {
        const std::optional<double> first = store.firstEventKey<RankStepEvent>(run);
        if (!first) return pass;
        from = double(static_cast<int64_t>(*first) / windowSteps * windowSteps);
    }
    const std::optional<double> last = store.lastEventKey<RankStepEvent>(run);
    const std::set<int64_t> kept(keepRanks.begin(), keepRanks.end());
    int empty = 0;
    int64_t start = static_cast<int64_t>(*from);
    // Never the window of the newest step: its rows may still be coming.
    for (; last && pass.windows < maxWindows && empty < kEmptyWindowsPerPass && start + windowSteps <= *last;
         start += windowSteps) {
        bool tooNew = false;
        if (thinStepWindow(store, run, start, windowSteps, before, kept, keepRanks, pass, &tooNew)) continue;
        if (tooNew) break;
        ++empty;
    }
    if (empty > 0) store.setThinnedUntil(run, kRankStepEvent, double(start));
    return pass;
}

ThinningPass thinDeviceSamples(RunStore& store, int64_t run, double before, const std::vector<int64_t>& keepRanks,
                               const ThinningOptions& options) {
    ThinningPass pass;
    const double w = options.windowSeconds;
    if (!(w > 0)) return pass;
    std::optional<double> from = store.thinnedUntil(run, kDeviceEvent);
    if (!from) {
        const std::optional<double> first = store.firstEventKey<DeviceEvent>(run);
        if (!first) return pass;
        from = std::floor(*first / w) * w; // windows aligned on multiples of their length
    }
    const std::set<int64_t> kept(keepRanks.begin(), keepRanks.end());
    int empty = 0;
    double start = *from;
    for (; pass.windows < options.maxWindows && empty < kEmptyWindowsPerPass && start + w <= before; start += w)
        if (!thinWindow(store, run, start, start + w, kept, keepRanks, pass)) ++empty;
    if (empty > 0) store.setThinnedUntil(run, kDeviceEvent, start); // past the empty windows too
    return pass;
}

} // namespace parallax
