#pragma once

// The qwen_image kind's comparison with recorded outputs (tests/reference, diffusers' golden files).

#include "core/formats/SafetensorsFile.h"
#include "core/formats/SafetensorsWriter.h"
#include "core/spec/ModelDims.h"
#include "tests/trainer/support/ReferencePython.h"
#include "trainer/models/Model.h"
#include "trainer/models/PublishedNames.h"
#include "trainer/models/QwenImageUnits.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace parallax::testing {

// A transformer (or pipeline) folder's sizes, as a spec's model.from resolves them.
inline ModelDims qwenImageFolderDims(const std::string& folder) {
    ModelSpec spec;
    spec.kind = ModelKind::QwenImage;
    spec.from = folder;
    return resolveModel(spec);
}

// A training batch in run_qwen_image_reference.py's input layout: latents and noise (B, c, H, W),
// sigmas (B), prompt_embeds (B, T, D) float32, prompt_mask (B, T) int64 (1 a token, 0 padding;
// all ones for a batch without a mask). An Edit batch's reference latents as reference.0,
// reference.1, ... (B, c, h, w) float32.
inline void writeQwenImageBatch(const Batch& b, const std::string& path) {
    const torch::Tensor mask = b.attention_mask.defined()
                                   ? b.attention_mask.to(torch::kInt64).contiguous()
                                   : torch::ones({b.text_states.size(0), b.text_states.size(1)}, torch::kInt64);
    std::vector<torch::Tensor> references;
    for (const torch::Tensor& r : b.reference_latents) references.push_back(r.to(torch::kFloat32).contiguous());
    std::vector<TensorData> tensors = {
        {"latents", Dtype::F32, b.images.sizes().vec(), b.images.data_ptr()},
        {"noise", Dtype::F32, b.noise.sizes().vec(), b.noise.data_ptr()},
        {"sigmas", Dtype::F32, b.timesteps.sizes().vec(), b.timesteps.data_ptr()},
        {"prompt_embeds", Dtype::F32, b.text_states.sizes().vec(), b.text_states.data_ptr()},
        {"prompt_mask", Dtype::I64, mask.sizes().vec(), mask.data_ptr()}};
    for (size_t i = 0; i < references.size(); ++i)
        tensors.push_back({"reference." + std::to_string(i), Dtype::F32, references[i].sizes().vec(),
                           references[i].data_ptr()});
    writeSafetensors(path, tensors);
}

inline Batch readQwenImageBatch(const std::string& path) {
    const SafetensorsFile file(path);
    Batch b;
    b.images = readFloatTensor(file, "latents");
    b.noise = readFloatTensor(file, "noise");
    b.timesteps = readFloatTensor(file, "sigmas");
    b.text_states = readFloatTensor(file, "prompt_embeds");
    b.attention_mask = readLongTensor(file, "prompt_mask").to(torch::kBool);
    for (int i = 0; file.find("reference." + std::to_string(i)); ++i)
        b.reference_latents.push_back(readFloatTensor(file, "reference." + std::to_string(i)));
    for (int64_t i = 0; i < b.images.size(0); ++i) b.sample_index.push_back(i);
    return b;
}

// Parameters of every part whose gradients the comparisons ask for: the embeddings, both streams'
// attention, MLP and modulation in both blocks, the last block's text modulation (half of it read),
// norm_out and proj_out.
inline const std::vector<std::string>& qwenImageGradNames() {
    static const std::vector<std::string> names = {
        "img_in.weight", "txt_norm.weight", "txt_in.bias", "time_text_embed.timestep_embedder.linear_1.weight",
        "transformer_blocks.0.img_mod.1.weight", "transformer_blocks.0.txt_mod.1.bias",
        "transformer_blocks.0.attn.to_q.weight", "transformer_blocks.0.attn.add_k_proj.weight",
        "transformer_blocks.0.attn.norm_added_q.weight", "transformer_blocks.0.attn.to_add_out.weight",
        "transformer_blocks.0.txt_mlp.net.2.weight", "transformer_blocks.1.txt_mod.1.weight",
        "transformer_blocks.1.attn.to_out.0.bias", "transformer_blocks.1.attn.add_v_proj.weight",
        "transformer_blocks.1.attn.norm_k.weight", "transformer_blocks.1.img_mlp.net.0.proj.weight",
        "norm_out.linear.weight", "proj_out.bias"};
    return names;
}

// The velocity the model predicts on `batch` (B, P, 4c; an Edit batch's image being made), without gradients; `temb` receives the
// timestep embedding when given.
inline torch::Tensor qwenImagePrediction(Model& model, const Batch& batch, torch::Tensor* temb = nullptr) {
    torch::NoGradGuard noGrad;
    Activation a;
    for (int64_t i = 0; i + 1 < model.unitCount(); ++i) a = model.unit(i)->forward(a, batch);
    if (temb) *temb = a.at(2);
    auto& head = dynamic_cast<QwenImageHead&>(*model.unit(model.unitCount() - 1));
    return head.predict(a.at(1).narrow(1, 0, latentGrids(batch).front().tokens()), a.at(2));
}

// `model`'s prediction and flow-matching loss on `batch` against those `out` holds ("output", "loss":
// 1e-5), after which the loss's gradients are in the model.
inline void expectSameOutputAndLoss(Model& model, const Batch& batch, const SafetensorsFile& out) {
    EXPECT_LT(relativeError(qwenImagePrediction(model, batch), readFloatTensor(out, "output")), 1e-5);
    const Activation result = model.forwardAll(batch);
    const torch::Tensor loss = result.at(0) / result.at(1);
    loss.backward();
    EXPECT_NEAR(loss.item<double>(), readFloatTensor(out, "loss").item<double>(), 1e-5);
}

// The model's gradients by published name (undefined where backward left none).
inline std::map<std::string, torch::Tensor> publishedGradients(const Model& model) {
    std::map<std::string, torch::Tensor> grads;
    for (const auto& [name, tensor] : publishedParameters(model)) grads[name] = tensor.grad();
    return grads;
}

// The gradients of each parameter `out` holds one of ("grad.NAME"), 1e-4 relative.
inline void expectSameGradients(const Model& model, const SafetensorsFile& out) {
    const std::map<std::string, torch::Tensor> mine = publishedGradients(model);
    const std::string prefix = "grad.";
    int compared = 0;
    for (const TensorInfo& t : out.tensors()) {
        if (t.name.rfind(prefix, 0) != 0) continue;
        const std::string name = t.name.substr(prefix.size());
        ASSERT_TRUE(mine.count(name)) << name << " is no parameter of the model";
        ASSERT_TRUE(mine.at(name).defined()) << name;
        EXPECT_LT(relativeError(mine.at(name), readFloatTensor(out, t.name)), 1e-4) << name;
        ++compared;
    }
    EXPECT_GT(compared, 0) << "no gradient recorded";
}

} // namespace parallax::testing
