#include "trainer/cache/InStepEncoder.h"

#include "trainer/cache/QwenImageTextEncoder.h"
#include "trainer/data/DataError.h"
#include "trainer/data/DatasetUtils.h"
#include "trainer/models/QwenImageTokens.h"
#include "trainer/models/QwenImageVaeWeights.h"

#include <algorithm>
#include <stdexcept>

namespace parallax {

namespace {

std::string shapeOf(const torch::Tensor& t) {
    std::string text = "(";
    for (int64_t i = 0; i < t.dim(); ++i) text += (i ? ", " : "") + std::to_string(t.size(i));
    return text + ")";
}

} // namespace

InStepEncoder::InStepEncoder(const std::string& pipelineFolder, const ModelDims& dims, torch::Device device,
                             torch::ScalarType dtype)
    : m_dims(dims), m_device(device) {
    QwenImageVaeOptions options;
    options.decoder = false;
    options.device = device;
    options.dtype = dtype;
    m_vae = loadQwenImageVae(pipelineFolder, options);
    m_vae->eval();
    for (torch::Tensor& p : m_vae->parameters()) p.set_requires_grad(false);
    m_text = std::make_unique<QwenImageTextEncoder>(pipelineFolder, device, dtype);
    if (m_text->width() != dims.text_dim)
        throw std::invalid_argument(pipelineFolder + ": its text encoder's states are " + std::to_string(m_text->width()) +
                                    " wide, where model.text_dim = " + std::to_string(dims.text_dim) +
                                    " (the transformer's joint_attention_dim)");
}

InStepEncoder::~InStepEncoder() = default;

std::vector<torch::Tensor> InStepEncoder::parameters() const {
    std::vector<torch::Tensor> all = m_vae->parameters();
    for (const torch::Tensor& p : m_text->parameters()) all.push_back(p);
    return all;
}

Batch InStepEncoder::encode(const Batch& host) const {
    if (!host.pixels.defined() || !host.tokens.defined() || !host.attention_mask.defined() || !host.noise.defined())
        throw std::logic_error("the step's encoder takes an image-caption batch (pixels, tokens, attention mask, noise)");
    Batch batch = host.to(m_device);
    torch::NoGradGuard noGrad;
    const int64_t b = host.size();
    // Each sample alone, as the cache encodes it: the same numbers whatever shares its micro-batch.
    std::vector<torch::Tensor> latents;
    for (int64_t i = 0; i < b; ++i)
        latents.push_back(m_vae->encode(batch.pixels[i].unsqueeze(0)).squeeze(0).to(torch::kFloat32));
    batch.images = torch::stack(latents);
    for (const torch::Tensor& pixels : batch.reference_pixels) {
        std::vector<torch::Tensor> reference;
        for (int64_t i = 0; i < b; ++i)
            reference.push_back(m_vae->encode(pixels[i].unsqueeze(0)).squeeze(0).to(torch::kFloat32));
        batch.reference_latents.push_back(torch::stack(reference));
    }
    if (!batch.images.sizes().equals(host.noise.sizes()))
        throw DataError("the VAE of model.from gives latents of " + shapeOf(batch.images) +
                        " for images of " + shapeOf(host.pixels) + ", where model.channels and the " +
                        "bucket give " + shapeOf(host.noise));
    // Each prompt's length from the host's ids: no wait for the device.
    const torch::Tensor lengths = host.tokens.ge(0).sum(1);
    const int64_t longest = host.attention_mask.size(1);
    batch.text_states = torch::zeros({b, longest, m_dims.text_dim}, torch::dtype(torch::kFloat32).device(m_device));
    // An Edit batch's reference images for the text encoder: each sample's rows and grids, in order.
    std::vector<int64_t> images(static_cast<size_t>(b), 0);
    if (host.image_grid.defined())
        images = findImageTokens(host.tokens, host.tokens.ge(0), host.image_grid, m_text->dims(), host.sample_index)
                     .imagesPerSample;
    int64_t gridRow = 0, patchRow = 0;
    for (int64_t i = 0; i < b; ++i) {
        const torch::Tensor ids = batch.tokens[i].narrow(0, 0, lengths[i].item<int64_t>()).unsqueeze(0);
        torch::Tensor states;
        if (images[static_cast<size_t>(i)] == 0) {
            states = m_text->encodeIds(ids);
        } else {
            const torch::Tensor grid = host.image_grid.narrow(0, gridRow, images[static_cast<size_t>(i)]);
            const int64_t rows = grid.prod(1).sum().item<int64_t>();
            states = m_text->encodeIds(ids, batch.pixel_values.narrow(0, patchRow, rows), grid);
            gridRow += grid.size(0);
            patchRow += rows;
        }
        const int64_t n = std::min(states.size(0), longest);
        batch.text_states[i].narrow(0, 0, n).copy_(states.narrow(0, 0, n));
    }
    withoutFullMask(batch, host.attention_mask); // as the cache's batch of the same samples
    batch.pixels = torch::Tensor();
    batch.tokens = torch::Tensor();
    batch.reference_pixels.clear();
    batch.pixel_values = torch::Tensor();
    batch.image_grid = torch::Tensor();
    return batch;
}

} // namespace parallax
