#pragma once

#include "core/spec/Choice.h"
#include "core/spec/ModelDims.h"
#include "core/spec/ModelTensors.h"

#include <cstdint>
#include <string>
#include <vector>

namespace parallax {

// What a sample of a kind holds and what its loss is, as the data pipeline makes batches for it.
enum class Objective {
    NextToken,         // a text sequence; the loss predicts each next token (gpt)
    Conversation,      // a chat with its images; the next token of each assistant turn (qwen2_5_vl)
    LatentFlow,        // VAE latents with the prompt's encoder states, noise and a shifted timestep; flow
                       // matching's velocity noise - latents (qwen_image)
    Reconstruction,    // an image in [-1, 1] and the noise of its posterior draw; the image decoded back and
                       // the posterior's KL divergence (qwen_image_vae)
};

// One unit of a model (embedding, block, head), as docs/models.md counts it: what the memory
// estimate, the pipeline split and MFU read. The trainer's models hold exactly these parameters
// and FLOPs (ModelStructure's test builds every preset and compares).
struct UnitEstimate {
    double flops = 0;        // forward FLOPs per sample
    bool block = false;      // a transformer block (what a pipeline divides)
    bool frozen = false;     // every parameter frozen
    int64_t split = 0;       // parameters divided among tensor-parallel ranks
    int64_t replicated = 0;  // parameters every tensor-parallel rank holds
    // Of those, the ones that hold no gradient ([finetune]: a frozen part, LoRA's base weights),
    // and the trainable parameters added beside them (LoRA adapters, copies of modules to save).
    int64_t frozenSplit = 0, frozenReplicated = 0;
    int64_t adapterSplit = 0, adapterReplicated = 0;
    // Per sample, in elements.
    double actReplicated = 0;
    double actSplit = 0;
    double input = 0;
    // Of the activations above, the attention probabilities (heads x queries x keys), which fused
    // attention (scaled_dot_product_attention, the worker's path on a GPU) never keeps.
    double scoresReplicated = 0, scoresSplit = 0;
    // Elements of the logits' size (split) the loss's backward holds beside what the unit keeps:
    // the head's; how many such arrays depends on the loss's path (Estimates.cpp: KernelPaths).
    double logits = 0;
    int64_t params() const;
};

struct ModelPreset {
    const char* name;
    ModelDims dims;
};

// The one table of model kinds: a new kind is a row here (its name, what it reads, its presets and
// its units), its ModelKind value, and its model in trainer/models (docs/architecture.md).
struct ModelKindInfo {
    ModelKind kind;
    const char* name;         // as a spec writes it
    const char* description;  // what it is, for the New run form's list
    bool images;              // trains on images (model.image_size, channels, patch), as pixels or latents
    bool vision_tower;        // has a vision tower (model.vision_*, finetune.freeze_vision)
    bool counts_image_tokens; // throughput counts image tokens besides text tokens
    Objective objective;
    std::vector<ModelPreset> presets; // smallest first
    // Its units, in model order, for dimensions every one of which is at least 1.
    std::vector<UnitEstimate> (*units)(const ModelDims&);
    bool conversations = false; // reads conversation files (data.kind = "conversations")
    // A published architecture: the config.json model_type values model.from reads, the layouts
    // its checkpoints name their weights in, and every parameter (ModelTensors.h), from which its
    // units count theirs. Empty and null for the look-alike kinds, which have neither folders nor
    // [finetune].
    std::vector<std::string> model_types = {};
    std::vector<WeightLayout> layouts = {};
    std::vector<ModelTensor> (*tensors)(const ModelDims&) = nullptr;
    bool trains = true; // the worker of this build has its model
    // Reads VAE latents with the text encoder's states (data.kind = "latents" or "synthetic")
    // instead of tokens: no vocabulary, model.text_dim wide prompts.
    bool latents = false;
    // The weights' single file in a folder of this kind; sharded: its name + ".index.json" and the
    // shards the index names.
    const char* weights_file = "model.safetensors";
    // finetune.lora_targets when a spec of this kind names none; empty: FinetuneSpec's (every
    // Linear of a Qwen language model).
    std::vector<std::string> lora_targets = {};
};

// Every kind, in ModelKind's order.
const std::vector<ModelKindInfo>& modelKinds();
// Throws std::invalid_argument for a value without a row.
const ModelKindInfo& modelKindInfo(ModelKind kind);
// The row of a spec's kind; nullptr when the spec names no known kind.
const ModelKindInfo* modelKindInfo(const Choice<ModelKind>& kind);

// What a kind reads, as predicates over the table's rows.
inline bool readsImages(const ModelKindInfo& k) { return k.images && !k.latents; }
inline bool readsText(const ModelKindInfo& k) { return !k.images; }
inline bool hasVisionTower(const ModelKindInfo& k) { return k.vision_tower; }
inline bool readsConversations(const ModelKindInfo& k) { return k.conversations; }
inline bool publishedModel(const ModelKindInfo& k) { return k.tensors != nullptr; }
inline bool readsLatents(const ModelKindInfo& k) { return k.latents; }
// A vocabulary of its own (model.vocab): every kind that reads tokens.
inline bool hasVocabulary(const ModelKindInfo& k) { return !k.latents && k.objective != Objective::Reconstruction; }
// Trains on images alone, to give them back (a VAE): no attention heads to split.
inline bool reconstructsImages(const ModelKindInfo& k) { return k.objective == Objective::Reconstruction; }
// Grouped-query attention (model.kv_heads): the published language models.
inline bool groupedQueryAttention(const ModelKindInfo& k) { return publishedModel(k) && !k.latents; }
// finetune.lora_targets for a spec of `kind` that names none: the kind's own, else FinetuneSpec's.
std::vector<std::string> defaultLoraTargets(const Choice<ModelKind>& kind);

// For a kind this program no longer has ("mmdit"), what took its place, as a sentence that ends a
// message; "" for any other name. Runs of such a kind stay in a store and are browsed as they were.
std::string retiredModelKind(const std::string& name);

// The kind a config.json's model_type stands for; nullptr for a type no kind reads.
const ModelKindInfo* modelKindOfType(const std::string& modelType);

// The names of the kinds for which `has` holds, quoted and joined with "or": "\"gpt\" or \"qwen2\"".
std::string modelKindNames(bool (*has)(const ModelKindInfo&));

} // namespace parallax
