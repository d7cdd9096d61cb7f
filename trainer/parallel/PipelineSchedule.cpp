#include "trainer/parallel/PipelineSchedule.h"

#include "core/spec/ScheduleInfo.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <stdexcept>
#include <string>

namespace parallax {

namespace {

using Kind = PipelineAction::Kind;

std::vector<PipelineAction> gpipe(int microbatches) {
    std::vector<PipelineAction> out;
    for (int m = 0; m < microbatches; ++m) out.push_back({Kind::Forward, 0, m});
    for (int m = 0; m < microbatches; ++m) out.push_back({Kind::Backward, 0, m});
    return out;
}

std::vector<PipelineAction> oneFOneB(int stages, int stage, int microbatches) {
    std::vector<PipelineAction> out;
    const int warmup = std::min(stages - stage - 1, microbatches);
    int nextForward = 0, nextBackward = 0;
    for (; nextForward < warmup; ++nextForward) out.push_back({Kind::Forward, 0, nextForward});
    while (nextForward < microbatches) {
        out.push_back({Kind::Forward, 0, nextForward++});
        out.push_back({Kind::Backward, 0, nextBackward++});
    }
    while (nextBackward < microbatches) out.push_back({Kind::Backward, 0, nextBackward++});
    return out;
}

// Megatron-LM's interleaved 1F1B: virtual micro-step k covers groups of `stages` micro-batches per
// chunk, chunks in order for forwards and in reverse for backwards.
std::vector<PipelineAction> interleaved(int stages, int stage, int microbatches, int chunks) {
    const int total = microbatches * chunks;
    auto chunkOf = [&](int k, bool forward) {
        const int c = (k % (stages * chunks)) / stages;
        return forward ? c : chunks - 1 - c;
    };
    auto microOf = [&](int k) { return (k / (stages * chunks)) * stages + k % stages; };
    int warmup = (stages - stage - 1) * 2 + (chunks - 1) * stages;
    warmup = std::min(warmup, total);
    std::vector<PipelineAction> out;
    int f = 0, b = 0;
    for (; f < warmup; ++f) out.push_back({Kind::Forward, chunkOf(f, true), microOf(f)});
    while (f < total) {
        out.push_back({Kind::Forward, chunkOf(f, true), microOf(f)});
        ++f;
        out.push_back({Kind::Backward, chunkOf(b, false), microOf(b)});
        ++b;
    }
    for (; b < total; ++b) out.push_back({Kind::Backward, chunkOf(b, false), microOf(b)});
    return out;
}

// ZB-H1 by simulating every stage in slots of one pass (see the header): the passes that depend on
// one run in slot t (on this stage or a neighbour) can run from slot t + 1 on.
std::vector<PipelineAction> zeroBubble(int stages, int stage, int microbatches) {
    const int p = stages, m = microbatches;
    constexpr int kNotYet = std::numeric_limits<int>::max();
    std::vector<std::vector<PipelineAction>> passes, out(static_cast<size_t>(p));
    for (int s = 0; s < p; ++s) passes.push_back(oneFOneB(p, s, m));
    // The slot after which each stage's forward and backward of each micro-batch is done.
    std::vector<std::vector<int>> forwardDone(static_cast<size_t>(p), std::vector<int>(static_cast<size_t>(m), kNotYet));
    std::vector<std::vector<int>> backwardDone = forwardDone;
    std::vector<size_t> next(static_cast<size_t>(p), 0);
    std::vector<std::deque<int>> waiting(static_cast<size_t>(p)); // micro-batches whose W has not run
    std::vector<int> inFlight(static_cast<size_t>(p), 0);
    int left = 3 * m * p;
    // Some stage can always run a pass (dependencies point one way, and a stage held back from a
    // forward has a W to run), so more slots than passes would mean a bug.
    for (int t = 0; left > 0; ++t) {
        if (t > 3 * m * p) throw std::logic_error("the zb1 schedule simulation stalled");
        for (int s = 0; s < p; ++s) {
            const auto si = static_cast<size_t>(s);
            std::deque<int>& w = waiting[si];
            PipelineAction run{Kind::WeightGrad, 0, -1};
            if (next[si] < passes[si].size()) {
                const PipelineAction a = passes[si][next[si]];
                const auto mi = static_cast<size_t>(a.microbatch);
                const bool ready = a.kind == Kind::Forward ? s == 0 || forwardDone[si - 1][mi] <= t
                                                           : s == p - 1 || backwardDone[si + 1][mi] <= t;
                const bool full = a.kind == Kind::Forward && inFlight[si] + static_cast<int>(w.size()) >= p;
                if (ready && !(full && !w.empty())) run = a;
            }
            if (run.microbatch < 0) {
                if (w.empty()) continue; // idle
                run.microbatch = w.front();
                w.pop_front();
            } else {
                ++next[si];
                const auto mi = static_cast<size_t>(run.microbatch);
                if (run.kind == Kind::Forward) {
                    forwardDone[si][mi] = t + 1;
                    ++inFlight[si];
                } else {
                    backwardDone[si][mi] = t + 1;
                    --inFlight[si];
                    w.push_back(run.microbatch);
                }
            }
            out[si].push_back(run);
            --left;
        }
    }
    return out[static_cast<size_t>(stage)];
}

} // namespace

bool splitsBackward(Schedule schedule, int stages) { return scheduleInfo(schedule).splitBackward && stages > 1; }

std::vector<PipelineAction> pipelineSchedule(Schedule schedule, int stages, int stage, int microbatches,
                                             int chunks) {
    if (stages < 1 || stage < 0 || stage >= stages)
        throw std::invalid_argument("pipeline stage " + std::to_string(stage) + " of " + std::to_string(stages));
    if (microbatches < 1) throw std::invalid_argument("train.global_batch: a step needs at least one micro-batch");
    if (scheduleInfo(schedule).chunked && chunks > 1) {
        if (microbatches % stages != 0)
            throw std::invalid_argument("parallel.schedule = \"interleaved\" needs micro-batches per step (" +
                                        std::to_string(microbatches) + ") to be a multiple of parallel.pp = " +
                                        std::to_string(stages));
        return interleaved(stages, stage, microbatches, chunks);
    }
    if (chunks != 1)
        throw std::invalid_argument("parallel.virtual_stages > 1 needs parallel.schedule = \"interleaved\"");
    if (schedule == Schedule::GPipe) return gpipe(microbatches);
    if (splitsBackward(schedule, stages)) return zeroBubble(stages, stage, microbatches);
    return oneFOneB(stages, stage, microbatches); // 1f1b, and interleaved over one chunk
}

} // namespace parallax
