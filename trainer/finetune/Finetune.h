#pragma once

#include "core/spec/ModelDims.h"
#include "core/spec/RunSpec.h"
#include "trainer/models/Model.h"

#include <cstdint>
#include <string>
#include <vector>

namespace parallax {

// A Linear that carries a LoRA adapter.
struct AdaptedLayer {
    std::string module;    // its path in the model: "units.3.q" (parameters "units.3.q.lora_A.weight", ...)
    std::string published; // its path in the published layout (Unit::publishedName), which adapter files name
    int64_t in = 0;        // A: (r, in), B: (out, r), whole (before tensor parallelism)
    int64_t out = 0;
};

// A parameter trained whole beside the adapters (LoRA's modules_to_save).
struct SavedParameter {
    std::string name;      // in the model: "units.5.out.weight"
    std::string published; // in the published layout: "lm_head.weight"
};

// What a run trains, once [finetune] is applied to its model.
struct AppliedFinetune {
    FinetuneSpec spec;  // as applied (finetuneOf)
    double scale = 1.0; // LoRA: alpha / r, or alpha / sqrt(r) with rslora
    std::vector<AdaptedLayer> adapted;
    // LoRA: the parameters trained whole beside the adapters (modules_to_save), by their model names.
    std::vector<SavedParameter> saved;
    // LoRA: a target also names Linears of frozen parts, which got no adapter (PEFT, matching the
    // names alone, would adapt them too: the adapter's config then names its modules one by one).
    bool targetsReachFrozen = false;
    int64_t trainable = 0; // parameter values that receive gradients (the adapters included)
    int64_t frozen = 0;    // parameter values that do not

    bool lora() const { return spec.mode == FinetuneMode::Lora; }
    // One line for the run's log: what trains, and that the rest holds no gradient or optimizer state.
    std::string summary() const;
};

// The [finetune] a run of `spec` applies to its model. A published kind takes the section as written.
// The kinds without published tensors here (gpt, qwen_image_vae) take its mode and LoRA fields;
// they have no parts for [finetune]'s freeze switches, whose defaults are meant for published
// checkpoints.
FinetuneSpec finetuneOf(const RunSpec& spec, const ModelDims& dims);

// LoRA's scale: alpha / r, or alpha / sqrt(r) with rslora.
double loraScale(const FinetuneSpec& finetune);

// Applies `finetune` to a model built for one device, before any parallelism, from what the model
// declares (Unit::partOf, Linear::lora_name), matching no layer by its name otherwise:
//  - full: the parameters of a frozen part stop requiring gradients;
//  - lora: every parameter stops requiring gradients, except those of the modules modules_to_save
//    names (by published path, as PEFT matches them: "lm_head", "merger"); each Linear whose lora_name
//    (or published module path's last components) a target names and
//    whose part is not frozen gets an adapter: A (r, in) drawn uniformly in +-1/sqrt(in) (PEFT's
//    kaiming-uniform with a = sqrt(5)) from a generator seeded with `seed`, layer by layer in model
//    order, so that every layout starts from the same numbers; B (out, r) zero.
// Parameters that do not require gradients get no gradient buffer and no optimizer state
// (GradBuckets takes only the others). Throws std::invalid_argument naming the field when a LoRA
// target adapts nothing or nothing would train.
AppliedFinetune applyFinetune(Model& model, const FinetuneSpec& finetune, uint64_t seed);

} // namespace parallax
