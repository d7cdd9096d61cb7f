#pragma once

#include "core/image/Image.h"
#include "core/image/QwenImageRows.h"
#include "trainer/cache/QwenImagePrompt.h"
#include "trainer/models/Model.h"
#include "trainer/models/QwenText.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace parallax {

// Qwen-Image's text encoder: the language model of Qwen2.5-VL, frozen, from a pipeline folder's
// text_encoder/ (config.json and its weights in either published name layout) with the tokenizer of
// its tokenizer/ (tokenizer.json, or a Qwen2Tokenizer's vocab.json, merges.txt and tokenizer_config.json,
// as Tokenizer::load reads a folder). A prompt's states are the last hidden state (after the final
// RMSNorm) of its tokens past the template's first 34, at most 1024, as the published pipeline gives
// them to the transformer. Runs on `device` in `dtype` under inference mode; its weights never
// take a gradient. Errors name the folder and the file.
class QwenImageTextEncoder {
public:
    QwenImageTextEncoder(const std::string& pipelineFolder, torch::Device device = torch::kCPU,
                         torch::ScalarType dtype = torch::kFloat32);
    // A language model already built (a Qwen2 or Qwen2.5-VL model with its weights) and the tokenizer:
    // for measurements at sizes no folder here holds. `source` names it in messages.
    QwenImageTextEncoder(std::shared_ptr<Model> model, Tokenizer tokenizer, torch::Device device,
                         torch::ScalarType dtype, const std::string& source);

    // One prompt's states (T, C) in float32 on the CPU, T <= 1024; T = 0 for nothing past the template.
    torch::Tensor encode(const std::string& prompt) const;
    // The states of one prompt's ids as prompt().ids gives them, (1, n) int64 on the encoder's device:
    // (n - drop, C) on the device in the encoder's dtype, under the caller's grad mode (not inference
    // mode: they may meet autograd later). encode() is this, moved to the CPU in float32.
    torch::Tensor encodeIds(const torch::Tensor& ids) const;
    // The same for an Edit prompt's ids (their image pads expanded) with its reference images' patch
    // rows (N, row values) on the encoder's device and their grids (images, 3) on the host, as
    // conditionRows makes them: the images run through the tower into the pads.
    torch::Tensor encodeIds(const torch::Tensor& ids, const torch::Tensor& pixelValues, const torch::Tensor& imageGrid) const;
    // An Edit prompt with its reference images (8-bit RGB, decoded), as the folder's Edit pipeline
    // encodes it: each image resized to the template's condition size with Lanczos, then cut into
    // patch rows by Qwen2.5-VL's processor (smart_resize, bicubic) and run through the vision tower
    // and merger into its <|image_pad|> tokens; the states past the template's 64 tokens, the
    // images' included, uncut. (T, C) float32 on the CPU. std::invalid_argument when the folder is a
    // text-to-image pipeline or takes fewer images.
    torch::Tensor encodeEdit(const std::string& prompt, const std::vector<Image>& references) const;
    // The patch rows the processor makes of one reference image for the text encoder.
    QwenImageRows conditionRows(const Image& rgb) const;
    // Several prompts, padded to the longest: {states (B, T, C), mask (B, T) bool, false for padding}.
    std::pair<torch::Tensor, torch::Tensor> encodeBatch(const std::vector<std::string>& prompts) const;

    int64_t width() const { return m_width; } // C: the transformer's joint_attention_dim
    const ModelDims& dims() const { return m_model->dims(); } // the Qwen2.5-VL's
    const QwenImagePrompt& prompt() const { return *m_prompt; }
    QwenImagePipeline pipeline() const { return m_pipeline; }
    std::vector<torch::Tensor> parameters() const { return m_model->parameters(); } // every weight, frozen

private:
    void takeModel(const std::string& source); // finds the embedding, the layers and the final norm
    // The states of the batch's tokens (its images through the tower when it has pixel_values),
    // past the template's tokens.
    torch::Tensor run(const Batch& batch) const;
    QwenImagePipeline m_pipeline = QwenImagePipeline::TextToImage;
    std::unique_ptr<QwenImagePrompt> m_prompt;
    std::shared_ptr<Model> m_model; // the whole Qwen2.5-VL; the tower and merger run for Edit prompts only
    std::vector<std::shared_ptr<Unit>> m_vision; // patch embedding, blocks, merger
    std::vector<std::shared_ptr<Unit>> m_layers;
    std::shared_ptr<Unit> m_embed;
    std::shared_ptr<QwenHead> m_head; // its final norm
    torch::Device m_device;
    torch::ScalarType m_dtype;
    int64_t m_width = 0;
};

// Qwen-Image's prompt template (the folder's pipeline's) with the tokenizer of a pipeline folder's
// tokenizer/ (what the encoder reads its prompts with), for the ids alone; errors as the encoder's.
std::unique_ptr<QwenImagePrompt> qwenImagePromptOf(const std::string& pipelineFolder);

// Reference images' patch rows for the text encoder, image after image, as a qwen2_5_vl batch holds
// them (Batch::pixel_values and image_grid).
struct ConditionRows {
    std::vector<float> values;
    std::vector<int64_t> grid; // frames, rows, columns (in patches) of each image
    int64_t rowValues = 0;
    int64_t patchRows = 0;
    // Appends one image's rows; returns the <|image_pad|> tokens it takes (one per merged unit).
    int64_t add(const QwenImageRows& rows, int64_t merge);
    torch::Tensor pixelValues() const; // (patchRows, rowValues) float32, a tensor of its own
    torch::Tensor imageGrid() const;   // (images, 3) int64
};

// The sides (multiples of 32) an Edit pipeline resizes a reference image of height x width to for
// the text encoder: about `area` pixels at the image's aspect (diffusers' calculate_dimensions).
ImageSides editConditionSides(int64_t height, int64_t width, int64_t area);

// The processor's rule (patch, merge, temporal) for the vision tower of a pipeline folder's
// text_encoder/ (its config.json alone is read); errors as the encoder's.
QwenImageRule textEncoderImageRule(const std::string& pipelineFolder);
// A reference image resized as `format` says (Lanczos to condition_pixels), then cut by `rule`.
QwenImageRows editConditionRows(const Image& rgb, const QwenImagePromptTemplate& format, const QwenImageRule& rule);

} // namespace parallax
