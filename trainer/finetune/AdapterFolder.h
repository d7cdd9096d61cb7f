#pragma once

#include "core/spec/ModelTensors.h"

#include "trainer/finetune/Finetune.h"

#include <torch/torch.h>

#include <functional>
#include <map>
#include <string>

namespace parallax {

// A parameter's whole value (CPU, float32) by its model name ("units.3.q.lora_A.weight"), wherever the
// caller keeps it (a checkpoint, a model on one device).
using FullTensor = std::function<torch::Tensor(const std::string& name)>;

// What a LoRA adapter folder says about its base model and task (PEFT's adapter_config.json).
struct AdapterBase {
    std::string model; // base_model_name_or_path: the folder the run started from; empty: null (a seed)
    std::string task;  // task_type, e.g. "CAUSAL_LM"; empty: null
    // The published layout the adapter's keys name modules in: the module paths of the transformers
    // release PEFT wraps (Qwen2.5-VL since transformers 4.52: model.language_model.*, model.visual.*).
    WeightLayout layout = WeightLayout::Flat;
    // A diffusers model (qwen_image): the folder also holds the adapter as diffusers'
    // load_lora_weights reads it and as ComfyUI's LoRA loader reads it.
    bool diffusers = false;
};

// The single files a diffusers adapter folder holds besides PEFT's: pytorch_lora_weights.safetensors
// with "transformer.<module path>.lora_A.weight" / ".lora_B.weight" (diffusers' save_lora_weights),
// and lora_comfyui.safetensors with "diffusion_model.<module path>..." (ComfyUI).
// The first carries the adapter's LoraConfig (adapter_config.json's fields under "transformer." keys)
// as JSON in its metadata under kDiffusersLoraMetadataKey, as diffusers' training scripts save it, so
// that load_lora_weights applies alpha / r; the second an "<module>.alpha" scalar per module (ComfyUI
// scales by alpha / r).
constexpr const char* kDiffusersLoraFile = "pytorch_lora_weights.safetensors";
constexpr const char* kComfyUiLoraFile = "lora_comfyui.safetensors";
constexpr const char* kDiffusersLoraMetadataKey = "lora_adapter_metadata";

// The adapter's tensors with `prefix` ("transformer.", "diffusion_model.") before each adapted
// module's published path.
std::map<std::string, torch::Tensor> prefixedAdapterTensors(const AppliedFinetune& finetune, const FullTensor& full,
                                                            const std::string& prefix);

// adapter_config.json of PEFT's LoRA: peft_type "LORA", r, lora_alpha, lora_dropout, use_rslora,
// target_modules (finetune.lora_targets, matched as PEFT matches module paths; where those names
// also reach Linears of frozen parts, a regular expression of the adapted module paths, in either
// published layout, so that PEFT adapts the same Linears), modules_to_save,
// base_model_name_or_path, task_type, bias "none".
std::string adapterConfigJson(const AppliedFinetune& finetune, const AdapterBase& base);

// The adapter's tensors under PEFT's keys: base_model.model.<published path, in `layout`>.lora_A.weight (r, in) and
// .lora_B.weight (out, r) per adapted Linear, and base_model.model.<published path of the module>.<name>
// for each parameter trained whole (modules_to_save), as PEFT saves them.
std::map<std::string, torch::Tensor> adapterTensors(const AppliedFinetune& finetune, const FullTensor& full,
                                                    WeightLayout layout = WeightLayout::Flat);

// Writes `dir` as a PEFT adapter folder (adapter_config.json, adapter_model.safetensors), each file
// replaced whole. FileError naming the file when it cannot be written.
void writeAdapterFolder(const std::string& dir, const AppliedFinetune& finetune, const AdapterBase& base,
                        const FullTensor& full);

// The base weights with the adapters merged in, W + scale * B A, by the weights' model names
// ("units.3.q.weight"), for every adapted Linear: what a merged export writes in their place.
std::map<std::string, torch::Tensor> mergedWeights(const AppliedFinetune& finetune, const FullTensor& full);

} // namespace parallax
