#pragma once

#include "core/spec/Estimates.h"
#include "core/spec/ModelDims.h"
#include "core/spec/ModelTensors.h"
#include "core/spec/RunSpec.h"

#include <cstdint>
#include <string>
#include <vector>

namespace parallax {

// What one part of a published model (vision tower, merger, language model) holds and trains under
// a run's [finetune], from the model's own tensor table and planFinetune: what the New run page
// says beside the model.
struct PartTraining {
    ModelPart part = ModelPart::Language;
    int64_t elements = 0;        // its parameters (a tied copy not counted)
    int64_t trained = 0;         // of them, those that receive gradients
    int64_t adapters = 0;        // LoRA adapters added to its Linears
    int64_t saved = 0;           // trainable copies of its modules (modules_to_save)
    std::vector<std::string> adapted; // the LoRA target names adapted in it, in model order
    bool frozen() const { return trained == 0 && adapters == 0 && saved == 0; }
};

// The parts of a model of `dims` in model order (the parts it has) under `finetune`; empty for a
// kind that declares no tensors.
std::vector<PartTraining> partTraining(const ModelDims& dims, const FinetuneSpec& finetune);

// "language model: LoRA r 8 on q_proj, k_proj, v_proj, o_proj (20.2M)", "vision tower: frozen (669.4M)",
// "merger: trains (45.2M)".
std::string describePartTraining(const PartTraining& part, const FinetuneSpec& finetune);

// The memory of the most loaded device for the spec's layout under three ways to fine-tune the same
// model: everything trains, the parts [finetune] freezes frozen (the spec's full fine-tune), and
// LoRA with the spec's rank and targets. The row matching the spec is marked.
struct FinetuneMemoryRow {
    std::string label;          // "full", "full, vision tower and merger frozen", "LoRA r 8"
    FinetuneSpec finetune;
    Estimates estimates;
    bool current = false;       // the spec's own [finetune]
};
// Empty for a kind that is not a published model. Throws std::invalid_argument as estimate() does.
std::vector<FinetuneMemoryRow> finetuneMemoryRows(const RunSpec& spec);

} // namespace parallax
