#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace parallax {

// The parts of a published model that [finetune]'s switches freeze.
enum class ModelPart { Vision, Merger, Language };

// How tensor parallelism divides a tensor among the ranks of a tensor-parallel group.
enum class TensorSplit {
    Replicated, // every rank holds it whole (norms, the vision tower, the merger)
    Column,     // a Linear's output features: weight rows and bias (q, gate, up)
    Row,        // a Linear's input features: weight columns (o, down); a bias stays whole
    Vocab,      // the rows of a token embedding or an output head
    KvColumn,   // as Column when parallel.tp divides the key/value heads, else Replicated (k, v)
};

// One parameter of a published model: the model's structure, written once. The estimates count
// its units from these, the folder check compares a checkpoint's names and shapes with them, and
// the worker builds and loads the same list.
struct ModelTensor {
    std::string name;           // as the flat layout names it: "model.layers.0.self_attn.q_proj.weight"
    std::vector<int64_t> shape; // as stored; a Linear's weight is (out, in)
    int unit = 0;               // the unit of the kind's table (ModelKinds.h) that holds it
    ModelPart part = ModelPart::Language;
    TensorSplit split = TensorSplit::Replicated;
    // LoRA may adapt it: a Linear's weight (out, in), the output head excepted (as in PEFT).
    bool adaptable = false;
    // Set: the model's own copy of the tensor so named, tied to it (lm_head.weight of a model with
    // tie_word_embeddings holds model.embed_tokens.weight's values): held, with a gradient and
    // optimizer state, where its unit runs, but never stored in a folder and not counted in the
    // model's size.
    std::string tiedTo;

    int64_t elements() const;
    bool tiedCopy() const { return !tiedTo.empty(); }
    // The module that holds it, its name less ".weight" / ".bias": "model.layers.0.self_attn.q_proj".
    std::string module() const;
};

// Whether `name` (a LoRA target or a module to save, as a spec writes it: "q_proj", "mlp.0",
// "merger", "lm_head") names the module `module`: it is the module's last dotted components.
bool moduleNamed(const std::string& module, const std::string& name);
// Whether `module` is the module `name` names or lies inside it ("visual.merger.mlp.0" lies
// inside "merger").
bool moduleWithin(const std::string& module, const std::string& name);

// The names a checkpoint of a published kind may use for its tensors. Flat: "model.layers.*",
// "model.embed_tokens.*", "visual.*", "lm_head.*" (Qwen2 and Qwen2.5-VL as published). Nested:
// "model.language_model.*", "model.visual.*", "lm_head.*" (Qwen2.5-VL saved by transformers 4.52
// and later).
enum class WeightLayout { Flat, Nested };

// The name a tensor of the flat layout has in `layout`.
std::string layoutName(const std::string& flatName, WeightLayout layout);
// "model.* / visual.*", "model.language_model.* / model.visual.*": for messages.
const char* layoutDescription(WeightLayout layout);

// The part as messages name it: "vision tower", "merger", "language model".
const char* partName(ModelPart part);

} // namespace parallax
