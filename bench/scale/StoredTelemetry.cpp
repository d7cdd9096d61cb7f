#include "bench/scale/StoredTelemetry.h"

#include <limits>
#include <map>
#include <utility>
#include <vector>

namespace parallax::scale {

namespace {

int64_t windowOf(int64_t step) {
    const int64_t q = step / kThinnedStepWindow;
    return (step % kThinnedStepWindow < 0 ? q - 1 : q) * kThinnedStepWindow;
}

} // namespace

int64_t rankStepsCovered(const RunStore& store, int64_t run) {
    const std::optional<double> mark = store.thinnedUntil(run, "rank_step");
    const int64_t thinnedBelow = mark ? static_cast<int64_t>(*mark) : std::numeric_limits<int64_t>::min();
    int64_t covered = 0;
    std::map<std::pair<int64_t, int64_t>, std::vector<int64_t>> windows; // (rank, first step) -> steps
    for (const RankStepEvent& e : store.events<RankStepEvent>(run)) {
        if (e.step >= thinnedBelow) ++covered;
        else windows[{e.rank, windowOf(e.step)}].push_back(e.step);
    }
    for (const auto& [key, steps] : windows) {
        const bool thinned = steps.size() == 1 && steps.front() == key.second;
        covered += thinned ? kThinnedStepWindow : static_cast<int64_t>(steps.size());
    }
    return covered;
}

StoredTelemetry storedTelemetry(const RunStore& store, int64_t run) {
    StoredTelemetry t;
    for (const DeviceEvent& d : store.deviceSamples(run)) {
        ++t.deviceRows;
        t.deviceSamples += d.samples;
    }
    t.rankStepRows = static_cast<int64_t>(store.events<RankStepEvent>(run).size());
    t.rankSteps = rankStepsCovered(store, run);
    return t;
}

} // namespace parallax::scale
