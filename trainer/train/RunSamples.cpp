#include "trainer/train/RunSamples.h"

#include "core/image/PngEncoder.h"
#include "core/spec/ModelKinds.h"
#include "core/util/Base64.h"
#include "trainer/compat/TorchCompat.h"
#include "trainer/models/QwenImageVaeModel.h"
#include "trainer/models/QwenImageVaeWeights.h"
#include "trainer/sampling/QwenImageSampler.h"
#include "trainer/sampling/SampleImage.h"

#include <algorithm>
#include <chrono>

namespace parallax {

std::unique_ptr<RunSamples> RunSamples::make(const RunSpec& spec, Model& model, const Dataset& dataset,
                                             const BatchEncoder* encoder, const ProcessGroups& groups,
                                             torch::Device device, TelemetryEmitter& out) {
    const ModelKindInfo* kind = modelKindInfo(spec.model.kind);
    if (spec.samples.every <= 0 || !kind || !(readsLatents(*kind) || reconstructsImages(*kind))) return nullptr;
    return std::unique_ptr<RunSamples>(new RunSamples(spec, model, dataset, encoder, groups, device, out));
}

RunSamples::RunSamples(const RunSpec& spec, Model& model, const Dataset& dataset, const BatchEncoder* encoder,
                       const ProcessGroups& groups, torch::Device device, TelemetryEmitter& out)
    : m_spec(spec), m_model(model), m_dataset(dataset), m_encoder(encoder), m_groups(groups), m_device(device),
      m_out(out) {
    m_count = std::min(spec.samples.count, dataset.size());
    if (groups.worldRank() == 0 && m_count < spec.samples.count)
        out.log("warn", "samples.count = " + std::to_string(spec.samples.count) + ", but the dataset holds " +
                            std::to_string(dataset.size()) + " samples: " + std::to_string(m_count) +
                            " images each time");
    if (reconstructsImages(modelKindInfo(spec.model.kind.value()))) {
        // The run's own VAE, whole on every rank (ZeRO-3 is refused with samples).
        const auto unit = std::dynamic_pointer_cast<QwenImageVaeUnit>(model.unit(0));
        if (!unit) throw std::logic_error("a qwen_image_vae model without its VAE unit");
        m_vae = unit->vae;
        return;
    }
    QwenImageVaeOptions options;
    options.encoder = false;
    options.device = device;
    options.dtype = device.is_cuda() && spec.train.precision == Precision::Bf16 ? torch::kBFloat16 : torch::kFloat32;
    m_vae = loadQwenImageVae(spec.model.from, options);
}

bool RunSamples::due(int64_t step, int64_t startStep) const {
    if (step == startStep) return step == 0; // a resumed run's first samples are its parent's last
    return step % m_spec.samples.every == 0 || step == m_spec.train.steps;
}

void RunSamples::draw(int64_t step, bool bf16) {
    compat::AutocastScope autocast(c10::DeviceType::CUDA, at::kBFloat16, bf16);
    for (int64_t i = 0; i < m_count; ++i) {
        if (i % m_groups.dpSize != m_groups.coord.dp) continue;
        const SampleEvent e = drawOne(i, step);
        if (m_groups.coord.tp == 0) m_out.emit(e);
    }
}

SampleEvent RunSamples::drawOne(int64_t index, int64_t step) {
    const auto start = std::chrono::steady_clock::now();
    Batch batch = m_dataset.makeBatch({index}, 0);
    if (reconstructsImages(modelKindInfo(m_spec.model.kind.value()))) return reconstructOne(batch, index, step, start);
    if (m_encoder) batch = m_encoder->encode(batch).to(torch::kCPU); // its prompt's states, as a cache holds them
    torch::Tensor prompt = batch.text_states[0]; // (T, text_dim), the prompt's states
    if (batch.attention_mask.defined()) prompt = prompt.index({batch.attention_mask[0].to(torch::kCPU)});
    SampleEvent e;
    e.step = step;
    e.index = index;
    e.seed = static_cast<int64_t>(m_spec.train.seed) + index;
    e.height = batch.images.size(2) * 8;
    e.width = batch.images.size(3) * 8;
    e.steps = m_spec.samples.steps;
    e.prompt = m_dataset.promptText(index);
    QwenImageSampler sampler(m_model, *m_vae);
    std::vector<torch::Tensor> references; // an Edit sample's reference images, as it trains with them
    for (const torch::Tensor& r : batch.reference_latents) references.push_back(r.narrow(0, 0, 1));
    const QwenImageSampler::Sample s = sampler.sample(prompt, torch::Tensor(), e.width, e.height, e.steps, 1.0,
                                                      static_cast<uint64_t>(e.seed), references);
    e.png = base64Encode(encodePng(sampleToRgb(s.image), "sample " + std::to_string(index)));
    e.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    e.t = TelemetryEmitter::now();
    return e;
}

SampleEvent RunSamples::reconstructOne(const Batch& batch, int64_t index, int64_t step,
                                       std::chrono::steady_clock::time_point start) {
    torch::NoGradGuard noGrad;
    const bool training = m_vae->is_training();
    m_vae->eval();
    const torch::Tensor image = batch.images.narrow(0, 0, 1); // (1, 3, S, S) in [-1, 1]
    const torch::Tensor back = m_vae->trackedDecode(m_vae->posterior(image).mean).clamp(-1.0, 1.0);
    m_vae->train(training);
    SampleEvent e;
    e.step = step;
    e.index = index;
    e.height = image.size(2);
    e.width = 2 * image.size(3); // the image, then what the VAE gives back
    e.prompt = "sample " + std::to_string(index) + " and its reconstruction";
    const torch::Tensor pair = torch::cat({image.to(torch::kCPU, torch::kFloat32), back.to(torch::kCPU, torch::kFloat32)}, 3);
    e.png = base64Encode(encodePng(sampleToRgb(pair), "sample " + std::to_string(index)));
    e.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    e.t = TelemetryEmitter::now();
    return e;
}

} // namespace parallax
