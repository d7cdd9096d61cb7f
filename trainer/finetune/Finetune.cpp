#include "trainer/finetune/Finetune.h"

#include "core/spec/FinetunePlan.h"
#include "core/spec/ModelKinds.h"
#include "trainer/compat/TorchCompat.h"
#include "trainer/models/Linear.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

namespace parallax {

namespace {

// Adapters draw from a stream of their own, so that adding LoRA changes none of the base's numbers.
constexpr uint64_t kLoraStream = 0x4c6f5241'00000001ull;

// A parameter's name in the model's published layout (Unit::publishedName), or, where the kind has
// none, in the model: "units.3." + "q.weight".
std::string publishedParameter(const Unit& unit, const std::string& unitPrefix, const std::string& local) {
    const std::string published = unit.publishedName(local);
    return published.empty() ? unitPrefix + local : published;
}

// "units.3.q.weight" -> "units.3.q"; "units.3.pos" -> "units.3" (a parameter the unit holds itself).
std::string moduleOf(const std::string& parameter) {
    const size_t dot = parameter.rfind('.');
    return dot == std::string::npos ? parameter : parameter.substr(0, dot);
}

bool frozenPart(const std::optional<ModelPart>& part, const FinetuneSpec& f) {
    return part && partFrozen(*part, f);
}

bool namesAny(const std::string& module, const std::vector<std::string>& names) {
    for (const std::string& name : names)
        if (moduleWithin(module, name)) return true;
    return false;
}

// Whether `target` names the layer: its declared name, or the last components of its published path.
bool targets(const std::string& target, const Linear& layer, const std::string& published) {
    return target == layer.lora_name || moduleNamed(published, target);
}

std::string joined(const std::vector<std::string>& names) {
    std::string out;
    for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
    return out;
}

std::string quotedList(const std::vector<std::string>& names) {
    std::string out;
    for (const std::string& n : names) out += (out.empty() ? "\"" : ", \"") + n + "\"";
    return "[" + out + "]";
}

struct Candidate {
    Linear* layer;
    std::string module;
    std::string published;
    bool frozen; // its part is frozen
};

// Every Linear that declares a LoRA name, in model order.
std::vector<Candidate> adaptableLayers(Model& model, const FinetuneSpec& f) {
    std::vector<Candidate> out;
    for (int64_t i = 0; i < model.unitCount(); ++i) {
        const std::shared_ptr<Unit> unit = model.unit(i);
        const std::string prefix = "units." + std::to_string(i) + ".";
        for (const auto& item : unit->named_modules("", /*include_self=*/false)) {
            auto* layer = dynamic_cast<Linear*>(item.value().get());
            if (!layer || layer->lora_name.empty()) continue;
            const std::string weight = item.key() + ".weight";
            out.push_back({layer, prefix + item.key(), moduleOf(publishedParameter(*unit, prefix, weight)),
                           frozenPart(unit->partOf(weight), f)});
        }
    }
    return out;
}

void requireTargetsMatch(const std::vector<Candidate>& layers, const FinetuneSpec& f, ModelKind kind) {
    std::vector<std::string> names;
    for (const Candidate& c : layers)
        if (std::find(names.begin(), names.end(), c.layer->lora_name) == names.end()) names.push_back(c.layer->lora_name);
    for (const std::string& target : f.lora_targets) {
        bool matched = false;
        for (const Candidate& c : layers) matched = matched || targets(target, *c.layer, c.published);
        if (!matched)
            throw std::invalid_argument("finetune.lora_targets names \"" + target + "\", which is no Linear of model.kind = \"" +
                                        choiceName(kind) + "\" that LoRA adapts; its Linears are " + joined(names));
    }
}

void addAdapters(Model& model, const FinetuneSpec& f, uint64_t seed, AppliedFinetune& out) {
    const std::vector<Candidate> layers = adaptableLayers(model, f);
    requireTargetsMatch(layers, f, model.dims().kind);
    torch::NoGradGuard noGrad;
    torch::Generator generator = compat::makeGenerator(seed ^ kLoraStream);
    for (const Candidate& c : layers) {
        bool named = false;
        for (const std::string& target : f.lora_targets) named = named || targets(target, *c.layer, c.published);
        out.targetsReachFrozen = out.targetsReachFrozen || (named && c.frozen);
        if (!named || c.frozen) continue;
        Linear& layer = *c.layer;
        if (layer.adapter) throw std::logic_error("LoRA applied twice to " + c.module);
        const int64_t in = layer.weight.size(1), outFeatures = layer.weight.size(0);
        auto a = std::make_shared<LoraFactor>(f.lora_r, in);
        auto b = std::make_shared<LoraFactor>(outFeatures, f.lora_r);
        const double bound = 1.0 / std::sqrt(static_cast<double>(in)); // kaiming-uniform, a = sqrt(5)
        a->weight.uniform_(-bound, bound, generator);
        a->to(layer.weight.device());
        b->to(layer.weight.device());
        layer.register_module("lora_A", a);
        layer.register_module("lora_B", b);
        layer.adapter = std::make_shared<LoraAdapter>(a, b, out.scale, f.lora_dropout);
        out.adapted.push_back({c.module, c.published, in, outFeatures});
    }
    if (out.adapted.empty())
        throw std::invalid_argument("finetune.lora_targets = " + quotedList(f.lora_targets) +
                                    " name only Linears of frozen parts: nothing would train; set the [finetune] "
                                    "freeze switch of their part to false");
}

} // namespace

FinetuneSpec finetuneOf(const RunSpec& spec, const ModelDims& dims) {
    FinetuneSpec f = spec.finetune;
    if (!publishedModel(modelKindInfo(dims.kind))) {
        f.freeze_vision = false;
        f.freeze_merger = false;
        f.freeze_llm = false;
    }
    return f;
}

double loraScale(const FinetuneSpec& f) {
    const double r = static_cast<double>(f.lora_r);
    return f.rslora ? f.lora_alpha / std::sqrt(r) : f.lora_alpha / r;
}

AppliedFinetune applyFinetune(Model& model, const FinetuneSpec& f, uint64_t seed) {
    AppliedFinetune out;
    out.spec = f;
    const bool lora = f.mode == FinetuneMode::Lora;
    if (lora) {
        if (f.lora_r < 1) throw std::invalid_argument("finetune.lora_r = " + std::to_string(f.lora_r) + " must be at least 1");
        out.scale = loraScale(f);
    }
    for (int64_t i = 0; i < model.unitCount(); ++i) {
        const std::shared_ptr<Unit> unit = model.unit(i);
        const std::string prefix = "units." + std::to_string(i) + ".";
        for (auto& item : unit->named_parameters()) {
            const std::string published = publishedParameter(*unit, prefix, item.key());
            const bool saved = lora && namesAny(moduleOf(published), f.modules_to_save);
            const bool trains = lora ? saved : !frozenPart(unit->partOf(item.key()), f);
            if (!trains) item.value().set_requires_grad(false);
            if (saved) out.saved.push_back({prefix + item.key(), published});
        }
    }
    if (lora) addAdapters(model, f, seed, out);
    for (const auto& p : model.parameters()) (p.requires_grad() ? out.trainable : out.frozen) += p.numel();
    if (out.trainable == 0)
        throw std::invalid_argument("every part of the model is frozen: nothing would train; set "
                                    "finetune.freeze_llm (or freeze_vision, freeze_merger) to false");
    return out;
}

std::string AppliedFinetune::summary() const {
    if (!lora() && frozen == 0) return {};
    std::ostringstream s;
    if (lora()) {
        std::vector<std::string> names;
        for (const AdaptedLayer& a : adapted) {
            const std::string last = a.module.substr(a.module.rfind('.') + 1);
            if (std::find(names.begin(), names.end(), last) == names.end()) names.push_back(last);
        }
        s << "LoRA r " << spec.lora_r << ", alpha " << spec.lora_alpha << (spec.rslora ? " (rsLoRA)" : "")
          << " on " << adapted.size() << " Linears (" << joined(names) << ")";
        if (!saved.empty()) s << " and " << saved.size() << " parameters trained whole (finetune.modules_to_save)";
    } else {
        s << "full fine-tuning with frozen parts";
    }
    s << ": " << trainable << " of " << (trainable + frozen) << " parameter values train; the " << frozen
      << " frozen hold no gradient and no optimizer state";
    return s.str();
}

} // namespace parallax
