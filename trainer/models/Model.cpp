#include "trainer/models/Model.h"

#include "core/spec/ModelKinds.h"
#include "trainer/compat/TorchCompat.h"
#include "trainer/models/GptModel.h"
#include "trainer/models/Layers.h"
#include "trainer/models/Linear.h"
#include "trainer/models/Qwen2Model.h"
#include "trainer/models/Qwen25VlModel.h"
#include "trainer/models/QwenImageModel.h"
#include "trainer/models/QwenImageVaeModel.h"
#include "trainer/models/RmsNorm.h"

#include <stdexcept>
#include <type_traits>

namespace parallax {

namespace {

// Host to GPU through pinned memory without blocking: a copy from pageable memory would make the
// host wait until the device has finished the work queued before it.
torch::Tensor moved(const torch::Tensor& t, const torch::Device& device) {
    if (!t.defined()) return t;
    if (device.is_cuda() && t.is_cpu()) return (t.is_pinned() ? t : t.pin_memory()).to(device, /*non_blocking=*/true);
    return t.to(device);
}

void requirePositive(int64_t value, const char* field) {
    if (value <= 0)
        throw std::invalid_argument(std::string(field) + " = " + std::to_string(value) + " must be positive");
}

void requireDivisible(int64_t value, const char* field, int64_t by, const char* byField) {
    if (value % by != 0)
        throw std::invalid_argument(std::string(field) + " = " + std::to_string(value) + " is not divisible by " +
                                    byField + " = " + std::to_string(by));
}

void validate(const ModelDims& d) {
    for (const auto& [field, value] : modelDimensionFields(d)) requirePositive(value, field);
    requireDivisible(d.dim, "model.dim", d.heads, "model.heads");
    const ModelKindInfo& kind = modelKindInfo(d.kind);
    if (kind.images) requireDivisible(d.image_size, "model.image_size", d.patch, "model.patch");
    if (kind.vision_tower) requireDivisible(d.vision_dim, "model.vision_dim", d.vision_heads, "model.vision_heads");
    if (d.kv_heads > 0) requireDivisible(d.heads, "model.heads", d.kv_heads, "model.kv_heads");
    if (readsLatents(kind)) {
        int64_t pairs = 0;
        for (int64_t n : d.mrope_section) pairs += n;
        if (d.mrope_section.size() != 3 || 2 * pairs != d.headDim())
            throw std::invalid_argument("model: the rotary axes (frame, row, column) of model.kind = \"" +
                                        choiceName(d.kind) + "\" cover " + std::to_string(2 * pairs) +
                                        " channels of a head, but model.dim / model.heads = " +
                                        std::to_string(d.headDim()) + "; keep model.dim / model.heads at the "
                                        "preset's or the folder's head width");
    }
}

template <class M>
std::shared_ptr<Model> make(const ModelDims& dims) {
    return std::make_shared<M>(dims);
}

// The model of each kind, in ModelKind's order (core/spec/ModelKinds.cpp holds the rest of a kind).
struct Builder {
    ModelKind kind;
    std::shared_ptr<Model> (*build)(const ModelDims&);
};
const Builder kBuilders[] = {
    {ModelKind::Gpt, make<GptModel>},
    {ModelKind::Qwen2_5_Vl, make<Qwen25VlModel>},
    {ModelKind::Qwen2, make<Qwen2Model>},
    {ModelKind::QwenImage, make<QwenImageModel>},
    {ModelKind::QwenImageVae, make<QwenImageVaeModel>},
};
static_assert(std::extent_v<decltype(kBuilders)> == kChoiceCount<ModelKind>, "a builder per ModelKind");

} // namespace

Batch Batch::to(const torch::Device& device) const {
    Batch b;
    b.tokens = moved(tokens, device);
    b.labels = moved(labels, device);
    b.images = moved(images, device);
    b.noise = moved(noise, device);
    b.timesteps = moved(timesteps, device);
    b.positions = moved(positions, device);
    b.attention_mask = moved(attention_mask, device);
    b.text_states = moved(text_states, device);
    for (const torch::Tensor& r : reference_latents) b.reference_latents.push_back(moved(r, device));
    b.pixels = moved(pixels, device);
    for (const torch::Tensor& r : reference_pixels) b.reference_pixels.push_back(moved(r, device));
    b.pixel_values = moved(pixel_values, device);
    b.image_grid = image_grid; // read on the host (the vision tower's windows)
    b.sample_index = sample_index;
    return b;
}

void Model::addUnit(std::shared_ptr<Unit> unit) {
    if (!m_unitList) m_unitList = register_module("units", std::make_shared<torch::nn::Module>("UnitList"));
    m_unitList->register_module(std::to_string(m_units.size()), unit);
    m_units.push_back(std::move(unit));
}

void Model::tie(int64_t sourceUnit, const std::string& sourceLocal, int64_t copyUnit, const std::string& copyLocal) {
    auto name = [](int64_t unit, const std::string& local) { return "units." + std::to_string(unit) + "." + local; };
    m_ties.push_back({name(sourceUnit, sourceLocal), name(copyUnit, copyLocal)});
}

void Model::replaceUnit(int64_t i, std::shared_ptr<Unit> unit) {
    if (i < 0 || i >= unitCount())
        throw std::out_of_range("replaceUnit: unit " + std::to_string(i) + " of " + std::to_string(unitCount()));
    m_unitList->replace_module(std::to_string(i), unit);
    m_units[static_cast<size_t>(i)] = std::move(unit);
}

Activation Model::forwardAll(const Batch& batch) {
    Activation a;
    for (const auto& unit : m_units) a = unit->forward(a, batch);
    return a;
}

std::set<std::string> parametersWithoutGradient(const Model& model) {
    std::set<std::string> out;
    for (int64_t i = 0; i < model.unitCount(); ++i) {
        const std::shared_ptr<Unit> unit = model.unit(i);
        for (const std::string& module : unit->withoutGradient())
            for (const auto& p : unit->named_parameters())
                if (p.key().rfind(module + ".", 0) == 0) out.insert("units." + std::to_string(i) + "." + p.key());
    }
    return out;
}

void initializeModel(Model& model, uint64_t seed) {
    torch::NoGradGuard noGrad;
    torch::Generator gen = compat::makeGenerator(seed);
    auto normal = [&](torch::Tensor& t, double std) { t.normal_(0.0, std, gen); };
    for (const auto& unit : model.units()) {
        for (const auto& item : unit->named_modules()) {
            torch::nn::Module& module = *item.value();
            if (auto* linear = dynamic_cast<Linear*>(&module)) {
                if (linear->init_std > 0) normal(linear->weight, linear->init_std);
                else linear->weight.zero_();
                if (linear->bias.defined()) linear->bias.zero_();
            } else if (auto* norm = dynamic_cast<torch::nn::LayerNormImpl*>(&module)) {
                if (norm->weight.defined()) norm->weight.fill_(1.0);
                if (norm->bias.defined()) norm->bias.zero_();
            } else if (auto* rms = dynamic_cast<RmsNorm*>(&module)) {
                rms->weight.fill_(1.0);
            } else if (auto* leaf = dynamic_cast<VaeLeaf*>(&module)) {
                // The VAE's own scheme (freshVaeValue), the draws initQwenImageVae makes.
                auto own = leaf->named_parameters(/*recurse=*/false);
                for (const VaeLeaf::Declared& d : leaf->declared()) own[d.name].copy_(freshVaeValue(d, gen));
            } else {
                // Embedding tables and the learned positions a unit holds directly.
                for (auto& p : module.named_parameters(/*recurse=*/false)) normal(p.value(), kInitStd);
            }
        }
    }
    // A tied copy was drawn like any parameter (the draws of the others stay those of an untied
    // model); it takes its source's values.
    const auto params = model.named_parameters();
    for (const Model::Tie& t : model.ties()) params[t.copy].copy_(params[t.source]);
}

std::shared_ptr<Model> constructModel(const ModelDims& dims) {
    validate(dims);
    std::shared_ptr<Model> model;
    for (const Builder& b : kBuilders)
        if (b.kind == dims.kind) model = b.build(dims);
    if (!model)
        throw std::invalid_argument("model.kind = \"" + choiceName(dims.kind) + "\" has no model in this build");
    return model;
}

std::shared_ptr<Model> buildModel(const ModelDims& dims, uint64_t seed) {
    std::shared_ptr<Model> model = constructModel(dims);
    initializeModel(*model, seed);
    return model;
}

} // namespace parallax
