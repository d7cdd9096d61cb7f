#include "trainer/parallel/PipelineSchedule.h"

#include <algorithm>
#include <stdexcept>

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

} // namespace

std::vector<PipelineAction> pipelineSchedule(Schedule schedule, int stages, int stage, int microbatches,
                                             int chunks) {
    if (stages < 1 || stage < 0 || stage >= stages)
        throw std::invalid_argument("pipeline stage " + std::to_string(stage) + " of " + std::to_string(stages));
    if (microbatches < 1) throw std::invalid_argument("train.global_batch: a step needs at least one micro-batch");
    if (schedule == Schedule::Interleaved && chunks > 1) {
        if (microbatches % stages != 0)
            throw std::invalid_argument("parallel.schedule = \"interleaved\" needs micro-batches per step (" +
                                        std::to_string(microbatches) + ") to be a multiple of parallel.pp = " +
                                        std::to_string(stages));
        return interleaved(stages, stage, microbatches, chunks);
    }
    if (chunks != 1)
        throw std::invalid_argument("parallel.virtual_stages > 1 needs parallel.schedule = \"interleaved\"");
    if (schedule == Schedule::GPipe) return gpipe(microbatches);
    return oneFOneB(stages, stage, microbatches); // 1f1b, and interleaved over one chunk
}

} // namespace parallax
