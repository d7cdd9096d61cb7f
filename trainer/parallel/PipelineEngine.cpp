#include "trainer/parallel/PipelineEngine.h"

#include "core/telemetry/SpanKind.h"

#include <chrono>
#include <map>
#include <stdexcept>
#include <string>

namespace parallax {

namespace {

constexpr int64_t kHeaderLength = 64;

} // namespace

PipelineEngine::PipelineEngine(std::vector<StageChunk> chunks, ProcessGroups& groups, Schedule schedule,
                               int microbatches)
    : m_chunks(std::move(chunks)), m_groups(groups),
      m_microbatches(microbatches) {
    if (m_chunks.empty()) throw std::invalid_argument("pipeline rank without model chunks");
    m_virtualStages = static_cast<int>(m_chunks.size()) * m_groups.ppSize;
    m_schedule = pipelineSchedule(schedule, m_groups.ppSize, m_groups.coord.pp, m_microbatches,
                                  static_cast<int>(m_chunks.size()));
    // Weight gradients left in a queue that no W pass empties would be lost, and W passes without a
    // queue would leave the backward whole: parallelize() sets the queues by the same rule.
    const bool split = splitsBackward(schedule, m_groups.ppSize);
    for (const StageChunk& chunk : m_chunks)
        if (static_cast<bool>(chunk.weightGrads) != split)
            throw std::logic_error(std::string("pipeline chunk ") + (split ? "without" : "with") +
                                   " a weight-gradient queue for parallel.schedule = \"" + choiceName(schedule) +
                                   "\" over " + std::to_string(m_groups.ppSize) + " stage(s)");
}

int PipelineEngine::rankOfVirtualStage(int virtualStage) const {
    return virtualStage % m_groups.ppSize;
}

Activation PipelineEngine::forwardChunk(int chunk, const Activation& input, const Batch& batch) {
    if (m_keepInputs) {
        m_keptInputs.resize(m_chunks.size());
        Activation& kept = m_keptInputs[static_cast<size_t>(chunk)];
        kept.clear();
        for (const torch::Tensor& t : input) kept.push_back(t.detach().clone());
        m_keptBatch = batch;
    }
    Activation a = input;
    for (const auto& unit : m_chunks[static_cast<size_t>(chunk)].units) {
        a = unit->forward(a, batch);
        m_groups.pp->progress();
    }
    return a;
}

// Tags keep every message of a step apart: (receiving virtual stage, micro-batch, direction, index).
static int messageTag(int virtualStage, int virtualStages, int microbatch, bool gradient, int index) {
    return (((microbatch * virtualStages + virtualStage) * 2 + (gradient ? 1 : 0)) * (kHeaderLength / 2)) + index;
}

void PipelineEngine::sendActivation(const Activation& a, int toVirtualStage, int microbatch, bool gradient) {
    const int peer = rankOfVirtualStage(toVirtualStage);
    auto header = torch::zeros({kHeaderLength}, torch::kLong);
    auto* h = header.data_ptr<int64_t>();
    int64_t at = 0;
    h[at++] = static_cast<int64_t>(a.size());
    for (const torch::Tensor& t : a) {
        if (at + 2 + t.dim() > kHeaderLength)
            throw std::runtime_error("pipeline activation with too many dimensions to describe");
        h[at++] = static_cast<int64_t>(t.scalar_type());
        h[at++] = t.dim();
        for (int64_t d : t.sizes()) h[at++] = d;
    }
    if (a.size() + 1 > static_cast<size_t>(kHeaderLength / 2))
        throw std::runtime_error("pipeline activation with too many tensors");
    m_sendBuffers.push_back(header.to(a.empty() ? torch::kCPU : a.front().device()));
    m_pendingSends.push_back(
        m_groups.pp->sendAsync(m_sendBuffers.back(), peer, messageTag(toVirtualStage, m_virtualStages, microbatch, gradient, 0)));
    for (size_t i = 0; i < a.size(); ++i) {
        m_sendBuffers.push_back(a[i].detach().contiguous());
        m_pendingSends.push_back(m_groups.pp->sendAsync(
            m_sendBuffers.back(), peer,
            messageTag(toVirtualStage, m_virtualStages, microbatch, gradient, static_cast<int>(i) + 1)));
    }
}

Activation PipelineEngine::recvActivation(int virtualStage, int microbatch, bool gradient) {
    // The sender is the neighbour: the next virtual stage for gradients, the previous for inputs.
    const int peer = rankOfVirtualStage(gradient ? virtualStage + 1 : virtualStage - 1);
    const torch::Device device = m_chunks.front().units.front()->parameters().empty()
                                     ? torch::Device(torch::kCPU)
                                     : m_chunks.front().units.front()->parameters().front().device();
    auto header = torch::zeros({kHeaderLength}, torch::TensorOptions().dtype(torch::kLong).device(device));
    m_groups.pp->recv(header, peer, messageTag(virtualStage, m_virtualStages, microbatch, gradient, 0));
    header = header.to(torch::kCPU);
    const auto* h = header.data_ptr<int64_t>();
    int64_t at = 0;
    const int64_t n = h[at++];
    Activation out;
    std::vector<std::shared_ptr<Work>> works;
    for (int64_t i = 0; i < n; ++i) {
        const auto dtype = static_cast<c10::ScalarType>(h[at++]);
        const int64_t dims = h[at++];
        std::vector<int64_t> shape(h + at, h + at + dims);
        at += dims;
        out.push_back(torch::empty(shape, torch::TensorOptions().dtype(dtype).device(device)));
        works.push_back(m_groups.pp->recvAsync(out.back(), peer,
                                               messageTag(virtualStage, m_virtualStages, microbatch, gradient,
                                                          static_cast<int>(i) + 1)));
    }
    for (auto& w : works) w->wait();
    return out;
}

void PipelineEngine::waitSends() {
    for (auto& w : m_pendingSends) w->wait();
    m_pendingSends.clear();
    m_sendBuffers.clear();
}

class PipelineEngine::StepSpans {
public:
    StepSpans(SpanTimer* timer, std::vector<SpanEvent>& spans, int rank, int stage, int64_t step)
        : m_timer(timer), m_spans(spans), m_rank(rank), m_stage(stage), m_step(step) {
        if (m_timer) m_timer->clear();
    }
    // A span of `kind` for micro-batch `micro` begins now.
    size_t begin(SpanKind kind, int micro) {
        if (!m_timer) return 0;
        SpanEvent s;
        s.rank = m_rank;
        s.stage = m_stage;
        s.step = m_step;
        s.microbatch = micro;
        s.kind = spanKindName(kind);
        m_spans.push_back(std::move(s));
        return m_timer->begin();
    }
    void end(size_t span) {
        if (m_timer) m_timer->end(span);
    }
    // The spans' times, known once the step's work is done.
    void resolve() {
        if (!m_timer) return;
        const auto times = m_timer->resolve();
        for (size_t i = 0; i < m_spans.size(); ++i) {
            m_spans[i].start = times.at(i).first;
            m_spans[i].end = times.at(i).second;
        }
    }

private:
    SpanTimer* m_timer;
    std::vector<SpanEvent>& m_spans;
    int m_rank, m_stage;
    int64_t m_step;
};

PipelineEngine::InFlight PipelineEngine::runForward(const PipelineAction& action, const Batch& batch,
                                                    StepSpans& spans, torch::Tensor& lossSum) {
    const int vs = action.chunk * m_groups.ppSize + m_groups.coord.pp;
    InFlight f;
    if (vs > 0) {
        const size_t span = spans.begin(SpanKind::Recv, action.microbatch);
        f.inputs = recvActivation(vs, action.microbatch, /*gradient=*/false);
        spans.end(span);
        for (auto& t : f.inputs)
            if (t.is_floating_point()) t.requires_grad_(true);
    }
    const size_t span = spans.begin(SpanKind::Forward, action.microbatch);
    f.outputs = forwardChunk(action.chunk, f.inputs, batch);
    spans.end(span);
    if (vs == m_virtualStages - 1) {
        // Summed on the device; read once at the end of the step (no host sync per micro-batch).
        lossSum = lossSum.defined() ? lossSum + f.outputs.at(0).detach() : f.outputs.at(0).detach();
    } else {
        sendActivation(f.outputs, vs + 1, action.microbatch, /*gradient=*/false);
    }
    return f;
}

void PipelineEngine::runBackward(const PipelineAction& action, InFlight f, double lossNormalizer, StepSpans& spans,
                                 const std::function<void()>& afterBackward) {
    const int vs = action.chunk * m_groups.ppSize + m_groups.coord.pp;
    WeightGradQueue* weightGrads = m_chunks[static_cast<size_t>(action.chunk)].weightGrads.get();
    Activation grads;
    if (vs < m_virtualStages - 1) {
        const size_t span = spans.begin(SpanKind::Recv, action.microbatch);
        grads = recvActivation(vs, action.microbatch, /*gradient=*/true);
        spans.end(span);
    }
    const size_t span = spans.begin(SpanKind::Backward, action.microbatch);
    if (weightGrads) weightGrads->beginBackward(action.microbatch);
    if (vs == m_virtualStages - 1) {
        (f.outputs.at(0) / lossNormalizer).backward();
    } else {
        std::vector<torch::Tensor> outs, gs;
        for (size_t i = 0; i < f.outputs.size(); ++i) {
            if (f.outputs[i].requires_grad()) {
                outs.push_back(f.outputs[i]);
                gs.push_back(grads.at(i));
            }
        }
        if (!outs.empty()) torch::autograd::backward(outs, gs);
    }
    if (weightGrads) weightGrads->endBackward();
    spans.end(span);
    if (!weightGrads && afterBackward) afterBackward();
    if (vs > 0) {
        Activation inputGrads;
        for (const auto& in : f.inputs) inputGrads.push_back(in.grad().defined() ? in.grad() : torch::zeros_like(in));
        sendActivation(inputGrads, vs - 1, action.microbatch, /*gradient=*/true);
    }
    m_groups.pp->progress();
}

PipelineEngine::Result PipelineEngine::runStep(const std::vector<Batch>& microbatches, double lossNormalizer,
                                               int64_t step, SpanTimer* timer,
                                               const std::function<void()>& afterBackward) {
    if (static_cast<int>(microbatches.size()) != m_microbatches)
        throw std::logic_error("pipeline step given " + std::to_string(microbatches.size()) + " micro-batches, expected " +
                               std::to_string(m_microbatches));
    Result result;
    std::map<std::pair<int, int>, InFlight> inFlight; // (chunk, micro-batch)
    torch::Tensor lossSum;
    StepSpans spans(timer, result.spans, m_groups.worldRank(), m_groups.coord.pp, step);
    for (const PipelineAction& action : m_schedule) {
        const Batch& batch = microbatches[static_cast<size_t>(action.microbatch)];
        if (action.kind == PipelineAction::Kind::WeightGrad) {
            const size_t span = spans.begin(SpanKind::Weight, action.microbatch);
            m_chunks[static_cast<size_t>(action.chunk)].weightGrads->run(action.microbatch);
            spans.end(span);
            if (afterBackward) afterBackward();
            m_groups.pp->progress();
        } else if (action.kind == PipelineAction::Kind::Forward) {
            inFlight[{action.chunk, action.microbatch}] = runForward(action, batch, spans, lossSum);
        } else {
            auto it = inFlight.find({action.chunk, action.microbatch});
            if (it == inFlight.end()) throw std::logic_error("pipeline backward before its forward");
            InFlight f = std::move(it->second);
            inFlight.erase(it);
            runBackward(action, std::move(f), lossNormalizer, spans, afterBackward);
        }
    }
    for (const StageChunk& chunk : m_chunks)
        if (chunk.weightGrads && chunk.weightGrads->pending() > 0)
            throw std::logic_error("the pipeline schedule left weight gradients without their W pass");
    if (m_groups.ppSize > 1) {
        const size_t span = spans.begin(SpanKind::Send, -1);
        waitSends();
        spans.end(span);
    } else {
        waitSends();
    }
    result.lossSum = lossSum;
    spans.resolve();
    return result;
}

} // namespace parallax
