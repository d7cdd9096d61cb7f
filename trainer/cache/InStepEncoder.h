#pragma once

#include "core/spec/ModelDims.h"
#include "trainer/data/BatchEncoder.h"

#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

namespace parallax {

class QwenImageTextEncoder;
class QwenImageVae;

// The encoding `parallax-cli cache` does, inside a qwen_image run's steps: for the batches of an
// image-caption dataset without its latent cache (CaptionPixelDataset), each image (Batch::pixels)
// and an Edit sample's reference images (Batch::reference_pixels) through the pipeline folder's VAE
// encoder and each prompt's ids (Batch::tokens; an Edit prompt's with its images' patch rows,
// Batch::pixel_values and image_grid) through its text encoder, one sample at a time as the cache
// encodes them, on the rank's device in `dtype` (the run's precision, as the cache is made on that
// device). The batch then holds what latentBatch makes of the cache: images and reference_latents
// (the VAE's normalized latents), text_states (cut at the attention mask's width, zero past each
// prompt's end), float32; pixels, reference pixels, patch rows and tokens are dropped. Both networks
// are frozen: no gradient, no optimizer state, not in checkpoints or exports. Every rank that gets a
// batch encodes it (pipeline stages and tensor-parallel ranks alike, to the same values).
class InStepEncoder : public BatchEncoder {
public:
    // std::invalid_argument naming the folder and the file (the VAE's, the text encoder's), or
    // model.text_dim when the text encoder's width is another.
    InStepEncoder(const std::string& pipelineFolder, const ModelDims& dims, torch::Device device,
                  torch::ScalarType dtype);
    ~InStepEncoder() override;

    Batch encode(const Batch& host) const override;
    // Every weight of the VAE's encoder and of the text encoder.
    std::vector<torch::Tensor> parameters() const;

private:
    std::shared_ptr<QwenImageVae> m_vae;
    std::unique_ptr<QwenImageTextEncoder> m_text;
    ModelDims m_dims;
    torch::Device m_device;
};

} // namespace parallax
