#include "trainer/parallel/ActivationCheckpoint.h"

#include <mutex>

namespace parallax {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The default generator of the device a unit runs on. Draws inside a unit (LoRA dropout) come from
// it, and the recomputation must draw what the forward drew: its state is kept and restored.
at::Generator generatorOf(const torch::Tensor& input) {
    return at::globalContext().defaultGenerator(input.defined() ? input.device() : torch::Device(torch::kCPU));
}

torch::Tensor generatorState(at::Generator generator) {
    std::lock_guard<std::mutex> lock(generator.mutex());
    return generator.get_state();
}

void setGeneratorState(at::Generator generator, const torch::Tensor& state) {
    std::lock_guard<std::mutex> lock(generator.mutex());
    generator.set_state(state);
}

struct Recompute : public torch::autograd::Function<Recompute> {
    static variable_list forward(AutogradContext* ctx, at::TensorList inputs, int64_t unit, int64_t batch) {
        ctx->saved_data["unit"] = unit;
        ctx->saved_data["batch"] = batch;
        ctx->save_for_backward(inputs.vec());
        ctx->saved_data["generator"] = generatorState(generatorOf(inputs.front()));
        torch::NoGradGuard noGrad;
        return reinterpret_cast<Unit*>(unit)->forward(inputs.vec(), *reinterpret_cast<const Batch*>(batch));
    }
    static variable_list backward(AutogradContext* ctx, variable_list grads) {
        auto* unit = reinterpret_cast<Unit*>(ctx->saved_data["unit"].toInt());
        const auto* batch = reinterpret_cast<const Batch*>(ctx->saved_data["batch"].toInt());
        variable_list inputs;
        for (const torch::Tensor& saved : ctx->get_saved_variables()) {
            torch::Tensor in = saved.detach();
            if (saved.requires_grad()) in.requires_grad_(true);
            inputs.push_back(in);
        }
        Activation out;
        {
            at::Generator generator = generatorOf(inputs.front());
            const torch::Tensor now = generatorState(generator);
            setGeneratorState(generator, ctx->saved_data["generator"].toTensor());
            torch::AutoGradMode enable(true);
            out = unit->forward(inputs, *batch);
            setGeneratorState(generator, now);
        }
        variable_list outs, outGrads;
        for (size_t i = 0; i < out.size(); ++i) {
            if (out[i].requires_grad() && grads[i].defined()) {
                outs.push_back(out[i]);
                outGrads.push_back(grads[i]);
            }
        }
        // Gradients of the block's parameters accumulate (and fire their hooks) here.
        if (!outs.empty()) torch::autograd::backward(outs, outGrads);
        variable_list inputGrads;
        for (const torch::Tensor& in : inputs) inputGrads.push_back(in.requires_grad() ? in.grad() : torch::Tensor());
        inputGrads.push_back(torch::Tensor());
        inputGrads.push_back(torch::Tensor());
        return inputGrads;
    }
};

class CheckpointedUnit : public Unit {
public:
    explicit CheckpointedUnit(std::shared_ptr<Unit> inner) : m_inner(std::move(inner)) {}
    Activation forward(const Activation& in, const Batch& batch) override {
        bool needsGrad = false;
        for (const auto& t : in) needsGrad |= t.requires_grad();
        if (!needsGrad || !torch::GradMode::is_enabled()) return m_inner->forward(in, batch);
        return Recompute::apply(at::TensorList(in), static_cast<int64_t>(reinterpret_cast<intptr_t>(m_inner.get())),
                                static_cast<int64_t>(reinterpret_cast<intptr_t>(&batch)));
    }
    std::string kindName() const override { return m_inner->kindName(); }
    bool checkpointUnit() const override { return m_inner->checkpointUnit(); }

private:
    std::shared_ptr<Unit> m_inner;
};

bool trains(const Unit& unit) {
    for (const torch::Tensor& p : unit.parameters())
        if (p.requires_grad()) return true;
    return false;
}

} // namespace

void checkpointBlocks(std::vector<StageChunk>& chunks, int64_t limit) {
    int64_t wrapped = 0;
    for (StageChunk& chunk : chunks)
        for (auto& unit : chunk.units) {
            if (!unit->checkpointUnit()) continue;
            if (limit > 0) {
                if (wrapped >= limit || !trains(*unit)) continue;
                ++wrapped;
            }
            unit = std::make_shared<CheckpointedUnit>(unit);
        }
}

} // namespace parallax
