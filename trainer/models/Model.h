#pragma once

#include "core/spec/ModelDims.h"
#include "core/spec/ModelTensors.h"

#include <torch/torch.h>

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace parallax {

// One micro-batch as the data pipeline hands it to the model. Fields a kind does not use stay
// undefined. Every random draw in it was derived from (seed, step, global sample index).
struct Batch {
    torch::Tensor tokens;     // gpt: (B, T+1) int64; qwen_image with `pixels`:
                              // each prompt's text-encoder input (QwenImagePrompt::ids), (B, L) int64, -1 past its end
    torch::Tensor labels;     // conversations: (B, T) int64 aligned with tokens, -1 = ignore
    torch::Tensor images;     // qwen_image_vae: (B, channels, S, S) float in [-1, 1];
                              // qwen_image: the VAE's normalized latents (B, 16, H, W), H and W even
    torch::Tensor noise;      // qwen_image: of images' shape; qwen_image_vae: of its latents' shape
    torch::Tensor timesteps;  // qwen_image (sigma): (B) in (0, 1)
    torch::Tensor positions;  // qwen: (B, T) or M-RoPE's (3, B, T) int64; undefined: 0..T-1
    torch::Tensor attention_mask; // qwen, qwen_image's prompt: (B, T) bool, false for padding; undefined: no padding
    torch::Tensor text_states;    // qwen_image: the text encoder's states of the prompt (B, T, text_dim) float
    // qwen_image Edit: the VAE's normalized latents of each reference image (B, 16, h, w), h and w
    // even, in the order the prompt names them; they follow the image being made in the sequence,
    // unnoised, and take no loss. Empty: text to image.
    std::vector<torch::Tensor> reference_latents;
    // qwen_image from an image-caption dataset without its latent cache, until the step's encoder
    // (BatchEncoder) turns them and `tokens` into images and text_states and drops them: each image
    // fitted to its aspect bucket, (B, 3, H, W) float in [-1, 1]; noise, timesteps and attention_mask
    // are already those of the latents and prompt states to come. Undefined otherwise.
    torch::Tensor pixels;
    // qwen_image Edit without the cache: each reference image fitted to the sample's bucket, as
    // `pixels` (B, 3, H, W); the step's encoder turns them into reference_latents. The text
    // encoder's patch rows of the reference images (resized as the Edit pipelines resize them) are
    // pixel_values and image_grid, as a qwen2_5_vl batch holds them; `tokens` hold their pads.
    std::vector<torch::Tensor> reference_pixels;
    // qwen2_5_vl: the patch rows of the batch's images, sample by sample and image by image in the
    // image processor's order, (N, 3 x temporal x patch x patch) float; undefined: no image.
    torch::Tensor pixel_values;
    torch::Tensor image_grid; // qwen2_5_vl: (images, 3) int64 frames, rows, columns in patches; on the host
    std::vector<int64_t> sample_index; // global sample indices, for tests and logging
    int64_t size() const { return static_cast<int64_t>(sample_index.size()); }
    // On a GPU the copies are queued without blocking the host (through pinned memory).
    Batch to(const torch::Device& device) const;
};

// What flows between units (and, with pipeline parallelism, between stages): a few tensors whose
// meaning is the producing unit's business.
using Activation = std::vector<torch::Tensor>;

// A contiguous piece of a model: the first reads the batch (input empty), the last returns
// {loss_sum (scalar), loss_count (scalar)}: the loss summed over its elements and how many elements
// it averaged over, so that the trainer can normalize by the global batch's count.
class Unit : public torch::nn::Module {
public:
    virtual Activation forward(const Activation& in, const Batch& batch) = 0;
    virtual std::string kindName() const = 0; // "embed", "block", "vision_block", "merge", "head", ...
    // Declared by the model: whether activation checkpointing recomputes this unit as a whole in
    // backward (a transformer block: much activation memory for its compute).
    virtual bool checkpointUnit() const { return false; }
    // The name its parameter `local` (as named inside the unit: "self_attn.q_proj.weight") has in
    // the model's published checkpoints ("model.layers.3.self_attn.q_proj.weight"); empty where the
    // kind has no published form.
    virtual std::string publishedName(const std::string& /*local*/) const { return {}; }
    // Declared by the model: the part of the model ([finetune]'s freeze switches: vision tower, merger,
    // language model) that holds the unit's parameter `parameter` ("q.weight", "tok.weight", as the
    // unit names it); none: no switch freezes it.
    virtual std::optional<ModelPart> partOf(const std::string& /*parameter*/) const { return std::nullopt; }
    // Declared by the model: the modules of the unit ("txt_mlp", "attn.to_add_out") whose parameters,
    // and LoRA adapters beside them, backward never reaches in the published model (their gradient
    // is None there, not zeros). torch's AdamW leaves such a parameter alone: no weight decay.
    virtual std::vector<std::string> withoutGradient() const { return {}; }
};

// A model is an ordered list of units registered as submodules "units.<i>" (parameter names are
// therefore stable: "units.3.q.weight").
class Model : public torch::nn::Module {
public:
    explicit Model(ModelDims dims) : m_dims(std::move(dims)) {}
    const ModelDims& dims() const { return m_dims; }
    const std::vector<std::shared_ptr<Unit>>& units() const { return m_units; }
    int64_t unitCount() const { return static_cast<int64_t>(m_units.size()); }
    std::shared_ptr<Unit> unit(int64_t i) const { return m_units.at(static_cast<size_t>(i)); }
    // Replaces a unit (tensor parallel and activation checkpointing wrap or rewrite units).
    void replaceUnit(int64_t i, std::shared_ptr<Unit> unit);

    // Runs every unit in order: returns {loss_sum, loss_count}.
    Activation forwardAll(const Batch& batch);

    // Declared by the model: parameters that are one weight in its mathematics but live in two
    // units (a head tied to the token embedding), so that pipeline stages can hold them apart. Each
    // `copy` starts with its `source`'s values; the trainer adds their gradients together so that
    // both take the same updates (trainer/parallel/TiedParameters.h). Names as named_parameters().
    struct Tie {
        std::string source, copy;
    };
    const std::vector<Tie>& ties() const { return m_ties; }

protected:
    void addUnit(std::shared_ptr<Unit> unit);
    // Ties parameter `copyLocal` of unit `copyUnit` to `sourceLocal` of unit `sourceUnit`.
    void tie(int64_t sourceUnit, const std::string& sourceLocal, int64_t copyUnit, const std::string& copyLocal);

private:
    ModelDims m_dims;
    std::vector<Tie> m_ties;
    std::vector<std::shared_ptr<Unit>> m_units;
    // The "units" submodule whose children "0", "1", ... are the units (a registered name cannot
    // contain a dot, so the units hang under one container).
    std::shared_ptr<torch::nn::Module> m_unitList;
};

// Builds the model of dims.kind with every parameter initialized from `seed` (docs/models.md).
// Throws std::invalid_argument naming the field when the dims cannot make that model.
std::shared_ptr<Model> buildModel(const ModelDims& dims, uint64_t seed);
// The same model with its parameters allocated but not drawn (their values are whatever the memory
// held): for weights that are loaded next, and for what only needs the model's shapes.
// buildModel is this and initializeModel.
std::shared_ptr<Model> constructModel(const ModelDims& dims);

// Every parameter of `model` (named as named_parameters()) under a module its unit declares
// withoutGradient().
std::set<std::string> parametersWithoutGradient(const Model& model);

// Draws every parameter of `model` as docs/models.md says, from one generator seeded with `seed`,
// unit by unit and, inside a unit, module by module in registration order.
void initializeModel(Model& model, uint64_t seed);

} // namespace parallax
