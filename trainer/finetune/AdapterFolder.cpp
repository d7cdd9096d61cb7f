#include "trainer/finetune/AdapterFolder.h"

#include "core/formats/SafetensorsWriter.h"
#include "core/util/Files.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <vector>

namespace parallax {

namespace {

using json = nlohmann::ordered_json;

const std::string kPrefix = "base_model.model.";

json nullOr(const std::string& text) { return text.empty() ? json(nullptr) : json(text); }

json nullOr(const std::vector<std::string>& list) { return list.empty() ? json(nullptr) : json(list); }

// PEFT writes an integral alpha as an integer.
json number(double value) {
    if (std::isfinite(value) && value == std::floor(value) && std::fabs(value) < 1e15) return static_cast<int64_t>(value);
    return value;
}

torch::Tensor wholeFloat(const FullTensor& full, const std::string& name) {
    return full(name).to(torch::kCPU, torch::kFloat).contiguous();
}

// A regular expression PEFT fullmatches against module paths: exactly the adapted modules, in either
// published layout (model.layers.* or model.language_model.layers.*; visual.* or model.visual.*).
std::string adaptedModulesPattern(const std::vector<AdaptedLayer>& adapted) {
    std::string out;
    for (const AdaptedLayer& a : adapted) {
        std::string path;
        for (char c : a.published) path += c == '.' ? std::string("\\.") : std::string(1, c);
        if (a.published.rfind("visual.", 0) == 0) path = "(model\\.)?" + path;
        else if (a.published.rfind("model.", 0) == 0) path = "model\\.(language_model\\.)?" + path.substr(7);
        out += (out.empty() ? "(" : "|") + path;
    }
    return out + ")";
}

json adapterConfig(const AppliedFinetune& finetune, const AdapterBase& base) {
    const FinetuneSpec& f = finetune.spec;
    json config;
    config["peft_type"] = "LORA";
    config["task_type"] = nullOr(base.task);
    config["base_model_name_or_path"] = nullOr(base.model);
    config["r"] = f.lora_r;
    config["lora_alpha"] = number(f.lora_alpha);
    config["lora_dropout"] = f.lora_dropout;
    config["use_rslora"] = f.rslora;
    if (finetune.targetsReachFrozen) config["target_modules"] = adaptedModulesPattern(finetune.adapted);
    else config["target_modules"] = f.lora_targets;
    config["modules_to_save"] = nullOr(f.modules_to_save);
    config["bias"] = "none";
    config["fan_in_fan_out"] = false;
    config["init_lora_weights"] = true;
    config["inference_mode"] = true;
    return config;
}

// diffusers' lora_adapter_metadata: the LoraConfig under "transformer." keys, which its loader
// builds the adapter from (without it, it takes alpha = r: a scale of 1).
std::string diffusersLoraMetadata(const AppliedFinetune& finetune, const AdapterBase& base) {
    const json config = adapterConfig(finetune, base);
    json prefixed;
    for (const auto& [key, value] : config.items()) prefixed["transformer." + key] = value;
    return prefixed.dump(2);
}

// ComfyUI's: an alpha per module beside its lora_A / lora_B, the module's scale alpha / r.
std::map<std::string, torch::Tensor> withComfyUiAlphas(std::map<std::string, torch::Tensor> tensors,
                                                       const AppliedFinetune& finetune, const std::string& prefix) {
    const double alpha = finetune.scale * static_cast<double>(finetune.spec.lora_r);
    for (const AdaptedLayer& a : finetune.adapted)
        tensors[prefix + a.published + ".alpha"] = torch::full({}, alpha, torch::kFloat);
    return tensors;
}

} // namespace

std::string adapterConfigJson(const AppliedFinetune& finetune, const AdapterBase& base) {
    return adapterConfig(finetune, base).dump(2) + "\n";
}

std::map<std::string, torch::Tensor> adapterTensors(const AppliedFinetune& finetune, const FullTensor& full,
                                                    WeightLayout layout) {
    std::map<std::string, torch::Tensor> out;
    for (const AdaptedLayer& a : finetune.adapted) {
        const std::string module = layoutName(a.published, layout);
        out[kPrefix + module + ".lora_A.weight"] = wholeFloat(full, a.module + ".lora_A.weight");
        out[kPrefix + module + ".lora_B.weight"] = wholeFloat(full, a.module + ".lora_B.weight");
    }
    for (const SavedParameter& s : finetune.saved) out[kPrefix + layoutName(s.published, layout)] = wholeFloat(full, s.name);
    return out;
}

std::map<std::string, torch::Tensor> prefixedAdapterTensors(const AppliedFinetune& finetune, const FullTensor& full,
                                                            const std::string& prefix) {
    std::map<std::string, torch::Tensor> out;
    for (const AdaptedLayer& a : finetune.adapted) {
        out[prefix + a.published + ".lora_A.weight"] = wholeFloat(full, a.module + ".lora_A.weight");
        out[prefix + a.published + ".lora_B.weight"] = wholeFloat(full, a.module + ".lora_B.weight");
    }
    return out;
}

namespace {

void writeTensors(const std::string& path, const std::map<std::string, torch::Tensor>& tensors,
                  TensorMetadata metadata = {}) {
    std::vector<TensorData> data;
    for (const auto& [name, t] : tensors) data.push_back({name, Dtype::F32, t.sizes().vec(), t.data_ptr()});
    metadata.insert(metadata.begin(), {"format", "pt"});
    writeSafetensors(path, data, metadata);
}

} // namespace

void writeAdapterFolder(const std::string& dir, const AppliedFinetune& finetune, const AdapterBase& base,
                        const FullTensor& full) {
    createDirectories(dir);
    writeTensors(joinPath(dir, "adapter_model.safetensors"), adapterTensors(finetune, full, base.layout));
    writeFileAtomic(joinPath(dir, "adapter_config.json"), adapterConfigJson(finetune, base));
    if (!base.diffusers) return;
    writeTensors(joinPath(dir, kDiffusersLoraFile), prefixedAdapterTensors(finetune, full, "transformer."),
                 {{kDiffusersLoraMetadataKey, diffusersLoraMetadata(finetune, base)}});
    writeTensors(joinPath(dir, kComfyUiLoraFile),
                 withComfyUiAlphas(prefixedAdapterTensors(finetune, full, "diffusion_model."), finetune, "diffusion_model."));
}

std::map<std::string, torch::Tensor> mergedWeights(const AppliedFinetune& finetune, const FullTensor& full) {
    std::map<std::string, torch::Tensor> out;
    for (const AdaptedLayer& a : finetune.adapted) {
        const torch::Tensor delta = torch::matmul(wholeFloat(full, a.module + ".lora_B.weight"),
                                                  wholeFloat(full, a.module + ".lora_A.weight")); // (out, in)
        out[a.module + ".weight"] = wholeFloat(full, a.module + ".weight") + finetune.scale * delta;
    }
    return out;
}

} // namespace parallax
