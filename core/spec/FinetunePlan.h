#pragma once

#include "core/spec/ModelKinds.h"
#include "core/spec/ModelTensors.h"
#include "core/spec/RunSpec.h"

#include <cstdint>
#include <string>
#include <vector>

namespace parallax {

// What one parameter of a published model does under a run's [finetune]:
//   full: a tensor trains unless its part is frozen.
//   lora: no tensor trains; LoRA adapts every adaptable Linear that lora_targets names and whose
//         part is not frozen (so the tower's gate_proj is adapted only when freeze_vision = false);
//         a module in modules_to_save trains a whole copy of itself instead (PEFT's way), whatever
//         its part.
struct TensorTraining {
    bool trains = false;  // its own values receive gradients
    bool adapter = false; // a LoRA adapter (A: r x in, B: out x r) trains beside it
    bool saved = false;   // a trainable copy of it trains beside it (modules_to_save)
};

bool partFrozen(ModelPart part, const FinetuneSpec& finetune);

// One entry per tensor, in their order.
std::vector<TensorTraining> planFinetune(const std::vector<ModelTensor>& tensors, const FinetuneSpec& finetune);

// The name a LoRA target gives an adaptable Linear: the last component of its module, or the last
// two where that is a number ("q_proj", "qkv", "mlp.0").
std::string loraTargetName(const ModelTensor& tensor);
// Every such name of the tensors, once, in model order (what a spec's lora_targets may hold).
std::vector<std::string> loraTargetNames(const std::vector<ModelTensor>& tensors);

// The units of a published model with a run's [finetune] applied: the parameters that hold no
// gradient (UnitEstimate::frozenSplit, frozenReplicated) and the trainable ones added beside them
// (adapterSplit, adapterReplicated; divided by tensor parallelism as the Linear they adapt: a
// column-split Linear's B is split and its A whole, a row-split one's A split and its B whole).
void applyFinetune(std::vector<UnitEstimate>& units, const std::vector<ModelTensor>& tensors,
                   const FinetuneSpec& finetune);

} // namespace parallax
