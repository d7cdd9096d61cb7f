#pragma once

#include "core/telemetry/Events.h"
#include "trainer/comm/ProcessGroups.h"
#include "trainer/models/Model.h"
#include "trainer/parallel/PipelineSchedule.h"
#include "trainer/parallel/SpanTimer.h"
#include "trainer/parallel/WeightGradQueue.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace parallax {

// The units one pipeline rank runs for one virtual stage.
struct StageChunk {
    int virtualStage = 0;                      // chunk * pp + pipeline stage
    std::vector<std::shared_ptr<Unit>> units;  // possibly wrapped (checkpointing, ZeRO-3)
    std::vector<int> indices;                  // each unit's index in the model
    // The Linear layers' weight gradients the backward leaves to the W passes, where the schedule
    // splits the backward (splitsBackward); null otherwise. Its units' Linear layers hand them over.
    std::shared_ptr<WeightGradQueue> weightGrads;
};

// Runs one training step's forwards and backwards on this rank, in the order of a pipeline
// schedule, passing activations and their gradients to the neighbouring virtual stages over the
// pipeline group. With one stage it is plain gradient accumulation. Where the schedule splits the
// backward (zb1), a backward leaves the Linear layers' weight gradients in its chunk's
// WeightGradQueue and the micro-batch's W pass adds them. Records a span per forward, backward,
// W pass and blocking receive when asked. Gradients land in the parameters' .grad() (the
// reducers' hooks take them from there; the W passes' after those hooks ran).
class PipelineEngine {
public:
    PipelineEngine(std::vector<StageChunk> chunks, ProcessGroups& groups, Schedule schedule, int microbatches);

    struct Result {
        torch::Tensor lossSum;        // summed loss of this rank's micro-batches, on the device (last
                                      // virtual stage only; undefined elsewhere)
        std::vector<SpanEvent> spans; // local clock (seconds since the epoch); empty unless recorded
    };
    // `lossNormalizer`: the global batch's loss element count; each micro-batch's loss sum is divided
    // by it before backward so that gradients are those of the global mean.
    // `afterBackward` runs once each micro-batch's gradients are complete on this rank: after its
    // backward, or after its W pass where the backward is split (ZeRO-3 reduces there).
    // Spans are recorded with `timer` when given (else none).
    Result runStep(const std::vector<Batch>& microbatches, double lossNormalizer, int64_t step, SpanTimer* timer,
                   const std::function<void()>& afterBackward = {});
    std::vector<StageChunk>& chunks() { return m_chunks; }

    int chunksPerStage() const { return static_cast<int>(m_chunks.size()); }

    // While set, each chunk's input (a copy) and its micro-batch are kept from the last forward of it,
    // so that its units can be timed alone after the steps (trainer/train/UnitTimer).
    void keepInputs(bool keep) { m_keepInputs = keep; }
    const std::vector<Activation>& keptInputs() const { return m_keptInputs; } // by chunk
    const Batch& keptBatch() const { return m_keptBatch; }
    int virtualStages() const { return m_virtualStages; }
    const std::vector<PipelineAction>& schedule() const { return m_schedule; }

private:
    struct InFlight {
        Activation inputs;  // leaves requiring grad (received), empty for the first virtual stage
        Activation outputs; // of the chunk's last unit
    };
    class StepSpans; // the spans of one step, described as they run and timed by the SpanTimer
    // One forward or backward action of the schedule: receives, computes, sends.
    InFlight runForward(const PipelineAction& action, const Batch& batch, StepSpans& spans, torch::Tensor& lossSum);
    void runBackward(const PipelineAction& action, InFlight f, double lossNormalizer, StepSpans& spans,
                     const std::function<void()>& afterBackward);
    Activation forwardChunk(int chunk, const Activation& input, const Batch& batch);
    void sendActivation(const Activation& a, int virtualStage, int microbatch, bool gradient);
    Activation recvActivation(int virtualStage, int microbatch, bool gradient);
    int rankOfVirtualStage(int virtualStage) const; // in the pipeline group
    void waitSends();

    std::vector<StageChunk> m_chunks;
    ProcessGroups& m_groups;
    int m_microbatches;
    int m_virtualStages;
    std::vector<PipelineAction> m_schedule;
    std::vector<std::shared_ptr<Work>> m_pendingSends;
    std::vector<torch::Tensor> m_sendBuffers;
    bool m_keepInputs = false;
    std::vector<Activation> m_keptInputs;
    Batch m_keptBatch;
};

} // namespace parallax
