#include "trainer/sampling/QwenImageSampler.h"

#include "core/spec/ModelKinds.h"
#include "trainer/compat/TorchCompat.h"
#include "trainer/sampling/QwenImageSchedule.h"

#include <sstream>
#include <stdexcept>
#include <string>

namespace parallax {

namespace {

// Eval mode for the length of a call, then the mode the module had.
class EvalScope {
public:
    explicit EvalScope(torch::nn::Module& module) : m_module(module), m_training(module.is_training()) {
        m_module.eval();
    }
    ~EvalScope() { m_module.train(m_training); }
    EvalScope(const EvalScope&) = delete;
    EvalScope& operator=(const EvalScope&) = delete;

private:
    torch::nn::Module& m_module;
    bool m_training;
};

std::string shapeOf(const torch::Tensor& t) {
    std::ostringstream s;
    s << t.sizes();
    return s.str();
}

} // namespace

torch::Tensor unpackLatents(const torch::Tensor& packed, int64_t height, int64_t width) {
    const int64_t b = packed.size(0), f = packed.size(2);
    return packed.reshape({b, height / 2, width / 2, f / 4, 2, 2}).permute({0, 3, 1, 4, 2, 5}).reshape({b, f / 4, height, width});
}

QwenImageSampler::QwenImageSampler(Model& transformer, QwenImageVae& vae) : m_transformer(transformer), m_vae(vae) {
    if (transformer.unitCount() >= 2) {
        m_embed = dynamic_cast<QwenImageEmbed*>(transformer.unit(0).get());
        m_head = dynamic_cast<QwenImageHead*>(transformer.unit(transformer.unitCount() - 1).get());
    }
    if (!m_embed || !m_head)
        throw std::invalid_argument("sampling needs the qwen_image model whole on this process (its embed first and "
                                    "head last); this model is " + std::string(modelKindInfo(transformer.dims().kind).name));
    m_device = m_embed->img_in->weight.device();
}

torch::Tensor QwenImageSampler::initialNoise(int64_t width, int64_t height, uint64_t seed) const {
    if (width < 16 || height < 16 || width % 16 || height % 16)
        throw std::invalid_argument("sample size " + std::to_string(width) + " x " + std::to_string(height) +
                                    ": width and height must be positive multiples of 16 (8 for the VAE, 2 for "
                                    "packing)");
    const int64_t channels = m_transformer.dims().channels;
    return torch::randn({1, channels, height / 8, width / 8}, compat::makeGenerator(seed),
                        torch::TensorOptions().dtype(torch::kFloat32))
        .to(m_device);
}

torch::Tensor QwenImageSampler::promptOnDevice(const torch::Tensor& states, const char* what) const {
    const int64_t textDim = m_transformer.dims().text_dim;
    if (states.dim() != 2 || states.size(0) < 1 || states.size(1) != textDim)
        throw std::invalid_argument(std::string(what) + " states " + shapeOf(states) + " must be (T, " +
                                    std::to_string(textDim) + "), T >= 1: the text encoder's states of one prompt");
    return states.detach().unsqueeze(0).to(m_device);
}

torch::Tensor QwenImageSampler::velocity(const torch::Tensor& packed, const torch::Tensor& references,
                                         const torch::Tensor& states, float t, const Batch& grid) {
    const torch::Tensor sigma = torch::full({1}, t, torch::TensorOptions().dtype(torch::kFloat32).device(m_device));
    Activation a =
        m_embed->embed(references.defined() ? torch::cat({packed, references}, 1) : packed, states, sigma, packed.size(1));
    for (int64_t i = 1; i + 1 < m_transformer.unitCount(); ++i) a = m_transformer.unit(i)->forward(a, grid);
    return m_head->predict(a.at(1).narrow(1, 0, packed.size(1)), a.at(2)).to(torch::kFloat32);
}

torch::Tensor QwenImageSampler::denoise(const torch::Tensor& noise, const torch::Tensor& promptStates,
                                        const torch::Tensor& negativeStates, int64_t steps, double guidance,
                                        const std::vector<torch::Tensor>& references) {
    const int64_t channels = m_transformer.dims().channels;
    if (noise.dim() != 4 || noise.size(0) != 1 || noise.size(1) != channels || noise.size(2) < 2 ||
        noise.size(3) < 2 || noise.size(2) % 2 || noise.size(3) % 2)
        throw std::invalid_argument("initial latents " + shapeOf(noise) + " must be (1, " + std::to_string(channels) +
                                    ", h, w) with h and w even");
    torch::NoGradGuard noGrad;
    EvalScope eval(m_transformer);
    const torch::Tensor prompt = promptOnDevice(promptStates, "prompt");
    const bool guided = guidance > 1.0 && negativeStates.defined();
    const torch::Tensor negative = guided ? promptOnDevice(negativeStates, "negative prompt") : torch::Tensor();
    const int64_t h = noise.size(2), w = noise.size(3);
    const QwenImageSchedule schedule = qwenImageSchedule(steps, (h / 2) * (w / 2));
    Batch grid; // what the blocks read: the latent grid's sides (no padding in one prompt)
    grid.images = noise;
    grid.sample_index = {0};
    torch::Tensor packedReferences;
    if (!references.empty()) {
        std::vector<torch::Tensor> packed;
        for (const torch::Tensor& r : references) {
            if (r.dim() != 4 || r.size(0) != 1 || r.size(1) != channels || r.size(2) % 2 || r.size(3) % 2)
                throw std::invalid_argument("reference latents " + shapeOf(r) + " must be (1, " +
                                            std::to_string(channels) + ", h, w) with h and w even");
            grid.reference_latents.push_back(r);
            packed.push_back(packLatents(r.to(m_device, torch::kFloat32)));
        }
        packedReferences = torch::cat(packed, 1);
    }

    torch::Tensor latents = packLatents(noise.to(m_device, torch::kFloat32)); // (1, P, 4 c)
    for (int64_t i = 0; i < steps; ++i) {
        const float t = schedule.modelTimesteps[static_cast<size_t>(i)];
        torch::Tensor v = velocity(latents, packedReferences, prompt, t, grid);
        if (guided) {
            const torch::Tensor uncond = velocity(latents, packedReferences, negative, t, grid);
            const torch::Tensor combined = uncond + guidance * (v - uncond);
            // The pipeline keeps each token's velocity at the norm of the conditional one.
            v = combined * (torch::linalg_vector_norm(v, 2, {-1}, true) /
                            torch::linalg_vector_norm(combined, 2, {-1}, true));
        }
        const float dt = schedule.sigmas[static_cast<size_t>(i + 1)] - schedule.sigmas[static_cast<size_t>(i)];
        latents = latents + dt * v;
    }
    return unpackLatents(latents, h, w);
}

QwenImageSampler::Sample QwenImageSampler::sample(const torch::Tensor& promptStates,
                                                  const torch::Tensor& negativeStates, int64_t width, int64_t height,
                                                  int64_t steps, double guidance, uint64_t seed,
                                                  const std::vector<torch::Tensor>& references) {
    Sample out;
    out.noise = initialNoise(width, height, seed);
    out.latents = denoise(out.noise, promptStates, negativeStates, steps, guidance, references);
    out.image = m_vae.decode(out.latents);
    return out;
}

} // namespace parallax
