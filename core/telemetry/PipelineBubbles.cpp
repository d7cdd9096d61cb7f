#include "core/telemetry/PipelineBubbles.h"

#include "core/telemetry/SpanKind.h"

#include "core/spec/Estimates.h"
#include "core/spec/ScheduleInfo.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>
#include <utility>

namespace parallax {

namespace {

using Interval = std::pair<double, double>;

// Sorted, disjoint intervals covering the same time as `in`.
std::vector<Interval> mergeIntervals(std::vector<Interval> in) {
    std::sort(in.begin(), in.end());
    std::vector<Interval> out;
    for (const Interval& i : in) {
        if (i.second <= i.first) continue;
        if (!out.empty() && i.first <= out.back().second) {
            out.back().second = std::max(out.back().second, i.second);
        } else {
            out.push_back(i);
        }
    }
    return out;
}

double total(const std::vector<Interval>& merged) {
    double sum = 0;
    for (const Interval& i : merged) sum += i.second - i.first;
    return sum;
}

// Both sorted and disjoint.
double overlap(const std::vector<Interval>& a, const std::vector<Interval>& b) {
    double sum = 0;
    size_t i = 0, j = 0;
    while (i < a.size() && j < b.size()) {
        const double lo = std::max(a[i].first, b[j].first);
        const double hi = std::min(a[i].second, b[j].second);
        if (hi > lo) sum += hi - lo;
        if (a[i].second < b[j].second) ++i;
        else ++j;
    }
    return sum;
}

// Rounding of epoch seconds (about 0.2 us at today's dates) when the worker shifts a rank's
// times into rank 0's clock must not read as a backward starting before its forward.
constexpr double kOrderToleranceSeconds = 1e-6;

std::string ms(double seconds) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.3f ms", seconds * 1e3);
    return buf;
}

} // namespace

bool PipelineBubbles::isCompute(const std::string& kind) {
    const std::optional<SpanKind> k = spanKindNamed(kind);
    return k && spanKindInfo(*k).compute;
}

bool PipelineBubbles::isPipelineComm(const std::string& kind) {
    const std::optional<SpanKind> k = spanKindNamed(kind);
    return k && spanKindInfo(*k).pipelineComm;
}

int PipelineBubbles::rankCount() const {
    int n = 0;
    for (const Stage& s : stages) n += static_cast<int>(s.ranks.size());
    return n;
}

PipelineBubbles PipelineBubbles::measure(const std::vector<SpanEvent>& spans) {
    PipelineBubbles result;
    struct Intervals {
        std::vector<Interval> compute;
        std::vector<Interval> comm;
        int computeSpans = 0;
    };
    std::map<std::pair<int, int>, Intervals> byRank; // (stage, rank)
    double start = std::numeric_limits<double>::infinity();
    double end = -std::numeric_limits<double>::infinity();
    for (const SpanEvent& s : spans) {
        const bool compute = isCompute(s.kind);
        if (!compute && !isPipelineComm(s.kind)) continue;
        if (result.step < 0) {
            result.step = s.step;
        } else if (s.step != result.step) {
            throw std::invalid_argument("pipeline bubbles are measured per step, but spans of steps " +
                                        std::to_string(result.step) + " and " + std::to_string(s.step) +
                                        " were given; pass one step's spans (RunStore::spans(run, step))");
        }
        const double e = std::max(s.start, s.end);
        start = std::min(start, s.start);
        end = std::max(end, e);
        Intervals& r = byRank[{s.stage, s.rank}];
        if (compute) {
            r.compute.emplace_back(s.start, e);
            ++r.computeSpans;
        } else {
            r.comm.emplace_back(s.start, e);
        }
    }
    if (byRank.empty()) return result;
    result.start = start;
    result.end = end;
    const double window = end - start;

    for (auto& [key, intervals] : byRank) {
        const std::vector<Interval> compute = mergeIntervals(std::move(intervals.compute));
        const std::vector<Interval> comm = mergeIntervals(std::move(intervals.comm));
        Rank r;
        r.stage = key.first;
        r.rank = key.second;
        r.busy = total(compute);
        r.blocked = total(comm) - overlap(comm, compute);
        // A window of zero length (a step of instantaneous spans) has nothing idle in it.
        r.fraction = window > 0 ? std::clamp(1.0 - r.busy / window, 0.0, 1.0) : 0.0;
        r.computeSpans = intervals.computeSpans;
        if (result.stages.empty() || result.stages.back().stage != r.stage) {
            Stage s;
            s.stage = r.stage;
            result.stages.push_back(s);
        }
        result.stages.back().ranks.push_back(r);
    }
    double sum = 0;
    for (Stage& s : result.stages) {
        s.minFraction = 1.0;
        s.maxFraction = 0.0;
        for (const Rank& r : s.ranks) {
            s.busy += r.busy;
            s.blocked += r.blocked;
            s.fraction += r.fraction;
            s.minFraction = std::min(s.minFraction, r.fraction);
            s.maxFraction = std::max(s.maxFraction, r.fraction);
        }
        const double n = static_cast<double>(s.ranks.size());
        s.busy /= n;
        s.blocked /= n;
        s.fraction /= n;
        sum += s.fraction;
    }
    result.overall = sum / static_cast<double>(result.stages.size());
    return result;
}

double PipelineBubbles::theoretical(int64_t stages, int64_t microbatches, const Choice<Schedule>& schedule,
                                    int64_t virtualStages) {
    if (!schedule.known())
        throw std::invalid_argument("parallel.schedule = \"" + schedule.name() +
                                    "\" is not a known schedule; use gpipe, 1f1b, interleaved or zb1");
    const bool interleaved = scheduleInfo(schedule.value()).chunked;
    if (microbatches < 1)
        throw std::invalid_argument("the pipeline needs at least one micro-batch per step, got " +
                                    std::to_string(microbatches) +
                                    "; make train.global_batch a multiple of parallel.dp * train.micro_batch");
    if (interleaved && virtualStages < 1)
        throw std::invalid_argument("parallel.virtual_stages = " + std::to_string(virtualStages) +
                                    " must be at least 1");
    return pipelineBubble(stages, microbatches, schedule.value(), virtualStages); // the estimates' formula
}

namespace {

// The passes recorded of one micro-batch on one rank and stage.
struct Passes {
    int forwards = 0;
    int backwards = 0;
    double lastForwardEnd = -std::numeric_limits<double>::infinity();
    double firstBackwardStart = std::numeric_limits<double>::infinity();
    std::vector<double> backwardEnds; // paired in order with the weight-gradient passes
    std::vector<double> weightStarts;
};

// PipelineBubbles::checkOrder's state: the spans gathered by (step, rank, stage, micro-batch), and
// the problems found.
class OrderCheck {
public:
    explicit OrderCheck(int microbatches) : microbatches(microbatches) {}

    void collect(const std::vector<SpanEvent>& spans) {
        for (const SpanEvent& s : spans) {
            if (!PipelineBubbles::isCompute(s.kind) && !PipelineBubbles::isPipelineComm(s.kind)) continue;
            auto [it, added] = stepStart.emplace(s.step, s.start);
            if (!added) it->second = std::min(it->second, s.start);
        }
        for (const SpanEvent& s : spans) {
            const bool compute = PipelineBubbles::isCompute(s.kind);
            if (!compute && !PipelineBubbles::isPipelineComm(s.kind)) continue;
            const double t0 = stepStart[s.step];
            if (s.end < s.start)
                problems.push_back(where(s.step, s.rank, s.stage) + ": " + s.kind + " of micro-batch " +
                                   std::to_string(s.microbatch) + " ends at +" + ms(s.end - t0) +
                                   ", before it starts at +" + ms(s.start - t0));
            if (!compute) continue;
            rankStages.emplace(s.step, s.rank, s.stage);
            const SpanKind kind = *spanKindNamed(s.kind); // a compute span's
            if (kind == SpanKind::Weight) splitBackward.emplace(s.step, s.rank, s.stage);
            if (s.microbatch < 0 || (microbatches > 0 && s.microbatch >= microbatches)) {
                problems.push_back(where(s.step, s.rank, s.stage) + ": " + s.kind + " of micro-batch " +
                                   std::to_string(s.microbatch) + ", outside 0.." +
                                   (microbatches > 0 ? std::to_string(microbatches - 1) : std::string("m-1")));
                continue;
            }
            Passes& p = passes[{s.step, s.rank, s.stage, s.microbatch}];
            if (kind == SpanKind::Forward) {
                ++p.forwards;
                p.lastForwardEnd = std::max(p.lastForwardEnd, s.end);
            } else if (kind == SpanKind::Backward) {
                ++p.backwards;
                p.firstBackwardStart = std::min(p.firstBackwardStart, s.start);
                p.backwardEnds.push_back(s.end);
            } else {
                p.weightStarts.push_back(s.start);
            }
        }
    }

    void checkPasses(int chunks) {
        for (const auto& [key, p] : passes) checkMicroBatch(key, p, chunks);
    }

    void checkMissing() {
        if (microbatches > 0) {
            for (const auto& [step, rank, stage] : rankStages) {
                for (int m = 0; m < microbatches; ++m) {
                    if (!passes.count({step, rank, stage, m}))
                        problems.push_back(where(step, rank, stage) + ": no forward or backward of micro-batch " +
                                           std::to_string(m) + " (expected micro-batches 0.." +
                                           std::to_string(microbatches - 1) + ")");
                }
            }
        }
    }

    std::vector<std::string> problems;

private:
    using Key = std::tuple<int64_t, int, int, int>; // (step, rank, stage, micro-batch)

    static std::string where(int64_t step, int rank, int stage) {
        return "step " + std::to_string(step) + " rank " + std::to_string(rank) + " stage " + std::to_string(stage);
    }

    void checkMicroBatch(const Key& key, const Passes& p, int chunks) {
        const auto& [step, rank, stage, micro] = key;
        const std::string at = where(step, rank, stage) + " micro-batch " + std::to_string(micro);
        if (p.forwards != p.backwards)
            problems.push_back(at + ": " + std::to_string(p.forwards) + " forward(s) but " +
                               std::to_string(p.backwards) + " backward(s)");
        if (chunks > 0 && p.forwards != chunks)
            problems.push_back(at + ": " + std::to_string(p.forwards) + " forward(s), expected " +
                               std::to_string(chunks) + " (one per model chunk)");
        if (p.forwards > 0 && p.backwards > 0 && p.firstBackwardStart + kOrderToleranceSeconds < p.lastForwardEnd) {
            const double t0 = stepStart[step];
            problems.push_back(at + ": a backward starts at +" + ms(p.firstBackwardStart - t0) +
                               ", before its forward ends at +" + ms(p.lastForwardEnd - t0));
        }
        // A schedule that splits the backward (zb1) runs one weight-gradient pass per backward, each
        // after it; the others record none.
        if (!splitBackward.count({step, rank, stage})) return;
        const auto weights = static_cast<int>(p.weightStarts.size());
        if (weights != p.backwards) {
            problems.push_back(at + ": " + std::to_string(p.backwards) + " backward(s) but " +
                               std::to_string(weights) + " weight-gradient pass(es) (W)");
            return;
        }
        std::vector<double> ends = p.backwardEnds, starts = p.weightStarts;
        std::sort(ends.begin(), ends.end());
        std::sort(starts.begin(), starts.end());
        for (size_t i = 0; i < starts.size(); ++i) {
            if (starts[i] + kOrderToleranceSeconds >= ends[i]) continue;
            const double t0 = stepStart[step];
            problems.push_back(at + ": a weight-gradient pass (W) starts at +" + ms(starts[i] - t0) +
                               ", before its backward ends at +" + ms(ends[i] - t0));
            break;
        }
    }

    int microbatches;
    std::map<Key, Passes> passes;
    std::set<std::tuple<int64_t, int, int>> rankStages;
    std::set<std::tuple<int64_t, int, int>> splitBackward; // rank-stages that recorded W passes
    std::map<int64_t, double> stepStart;
};

} // namespace

std::vector<std::string> PipelineBubbles::checkOrder(const std::vector<SpanEvent>& spans, int microbatches,
                                                     int chunks) {
    OrderCheck check(microbatches);
    check.collect(spans);
    check.checkPasses(chunks);
    check.checkMissing();
    return check.problems;
}

} // namespace parallax
