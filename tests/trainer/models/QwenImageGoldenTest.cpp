// The qwen_image kind against diffusers' own QwenImageTransformer2DModel and PEFT (golden files of
// tests/golden/qwen_image, made by tests/golden/make_qwen_image_golden.py on the GPU machine's CPU):
// the checkpoint and config as diffusers saved them load through model.from, and the batch its
// training script's way (an odd packed grid of 3 x 5, a padded prompt) gives the same velocity,
// flow-matching loss and gradients, no gradient for exactly the parameters diffusers left without
// one, and the same LoRA step; and diffusers' LoRA loader reads the worker's adapter file to the
// worker's output. An Edit batch with two reference images (make_qwen_image_edit_golden.py) equals
// diffusers' with and without zero_cond_t.

#include "core/formats/SafetensorsFile.h"
#include "core/spec/ModelKinds.h"
#include "tests/support/Process.h"
#include "tests/trainer/support/QwenImageCompare.h"
#include "tests/trainer/support/ReferencePython.h"
#include "trainer/finetune/AdapterFolder.h"
#include "trainer/finetune/Finetune.h"
#include "trainer/models/Model.h"
#include "trainer/models/PublishedNames.h"
#include "trainer/models/PublishedWeights.h"
#include "trainer/train/AdamW.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <set>
#include <sstream>

namespace parallax {
namespace {

std::string goldenDir() { return testing::sourceDir() + "/tests/golden/qwen_image"; }

std::string metadataValue(const SafetensorsFile& file, const std::string& key) {
    for (const auto& [k, v] : file.metadata())
        if (k == key) return v;
    ADD_FAILURE() << "no metadata " << key;
    return {};
}

// The names a comma-separated metadata value lists.
std::set<std::string> namesIn(const std::string& list) {
    std::set<std::string> out;
    std::stringstream in(list);
    for (std::string name; std::getline(in, name, ',');)
        if (!name.empty()) out.insert(name);
    return out;
}

// What diffusers' backward left without a gradient: None, or zero throughout (the last block's text
// queries, whose outputs only the text stream reads).
std::set<std::string> gradless(const SafetensorsFile& file) {
    std::set<std::string> out = namesIn(metadataValue(file, "grad_none"));
    for (const std::string& name : namesIn(metadataValue(file, "grad_zero"))) out.insert(name);
    return out;
}

std::shared_ptr<Model> goldenModel() {
    const std::string folder = goldenDir() + "/transformer";
    const std::shared_ptr<Model> model = constructModel(testing::qwenImageFolderDims(folder));
    loadPublishedWeights(*model, folder);
    return model;
}

// LoRA as make_qwen_image_golden.py added it (r 4, alpha 8, the kind's default targets), its
// adapters holding `file`'s tensors: name(key) for the key "<module>.lora_A.weight" / ".lora_B.weight".
// Returns the adapters by that key.
std::map<std::string, torch::Tensor> loadAdapters(Model& model, AppliedFinetune& applied, const SafetensorsFile& file,
                                                  const std::function<std::string(const std::string&)>& name) {
    FinetuneSpec f;
    f.mode = FinetuneMode::Lora;
    f.lora_r = 4;
    f.lora_alpha = 8;
    f.lora_targets = defaultLoraTargets(ModelKind::QwenImage);
    applied = applyFinetune(model, f, 1);
    EXPECT_EQ(applied.adapted.size(), 24u); // DiffSynth-Studio's 12 targets in each of the 2 blocks
    auto params = model.named_parameters();
    std::map<std::string, torch::Tensor> adapters;
    for (const AdaptedLayer& layer : applied.adapted)
        for (const char* which : {"lora_A", "lora_B"}) {
            const std::string key = layer.published + "." + which + ".weight";
            torch::Tensor p = params[layer.module + "." + which + ".weight"];
            torch::NoGradGuard noGrad;
            p.copy_(testing::readFloatTensor(file, name(key)));
            adapters[key] = p;
        }
    return adapters;
}

// Golden outputs of diffusers (commit 58eb52c, torch 2.11, float32) on its own tiny checkpoint.
TEST(QwenImageGolden, EqualsDiffusersOnItsOwnCheckpoint) {
    const std::shared_ptr<Model> model = goldenModel();
    const Batch batch = testing::readQwenImageBatch(goldenDir() + "/batch.safetensors");
    const SafetensorsFile golden(goldenDir() + "/golden.safetensors");
    // The target as diffusers' pipeline packs noise - latents.
    EXPECT_TRUE(torch::allclose(packLatents(batch.noise - batch.images), testing::readFloatTensor(golden, "target")));
    testing::expectSameOutputAndLoss(*model, batch, golden);
    testing::expectSameGradients(*model, golden);
    const std::set<std::string> none = gradless(golden);
    EXPECT_FALSE(none.empty());
    for (const auto& [name, grad] : testing::publishedGradients(*model))
        EXPECT_EQ(!grad.defined(), none.count(name) == 1) << name << (grad.defined() ? " has" : " has no") << " gradient";
    // The model declares the parameters whose gradient diffusers' backward leaves None (not zeros),
    // the ones the optimizer must not decay.
    std::map<const void*, std::string> published;
    for (const auto& [name, t] : publishedParameters(*model)) published[t.unsafeGetTensorImpl()] = name;
    const std::set<std::string> withoutGradient = parametersWithoutGradient(*model);
    std::set<std::string> declared;
    for (const auto& p : model->named_parameters())
        if (withoutGradient.count(p.key())) declared.insert(published.at(p.value().unsafeGetTensorImpl()));
    EXPECT_EQ(declared, namesIn(metadataValue(golden, "grad_none")));
}

// One PEFT LoRA step recorded by the same script (transformer.add_adapter, r 4, alpha 8, A and B
// drawn non-zero, torch.optim.AdamW with lr 1e-3 and the worker's default betas, eps and decay):
// with PEFT's weights in its adapters the worker gives the same output, loss, adapter gradients and
// AdamW update, and names its diffusers LoRA file's tensors as diffusers saved its own.
TEST(QwenImageGolden, LoraStepEqualsPeft) {
    const std::shared_ptr<Model> model = goldenModel();
    const SafetensorsFile peft(goldenDir() + "/lora.safetensors");
    AppliedFinetune applied;
    auto adapters = loadAdapters(*model, applied, peft, [](const std::string& key) { return "lora." + key; });

    // diffusers' save_lora_weights file of the same adapter: the same keys and values, and a LoraConfig
    // in its metadata that gives the worker's scale.
    testing::TempDir dir;
    const FullTensor full = [&model](const std::string& name) { return model->named_parameters()[name].detach(); };
    AdapterBase base;
    base.diffusers = true;
    writeAdapterFolder(dir.path(), applied, base, full);
    const SafetensorsFile mine(dir.path() + "/" + kDiffusersLoraFile), saved(goldenDir() + "/lora/" + kDiffusersLoraFile);
    ASSERT_EQ(mine.tensors().size(), saved.tensors().size());
    for (const TensorInfo& t : saved.tensors()) {
        ASSERT_NE(mine.find(t.name), nullptr) << t.name << " is not among the worker's diffusers LoRA keys";
        EXPECT_TRUE(torch::equal(testing::readFloatTensor(mine, t.name), testing::readFloatTensor(saved, t.name))) << t.name;
    }
    const auto theirs = nlohmann::json::parse(metadataValue(saved, kDiffusersLoraMetadataKey));
    const auto ours = nlohmann::json::parse(metadataValue(mine, kDiffusersLoraMetadataKey));
    for (const char* key : {"transformer.r", "transformer.lora_alpha", "transformer.use_rslora", "transformer.bias"})
        EXPECT_EQ(ours.at(key), theirs.at(key)) << key;
    EXPECT_EQ(ours.at("transformer.target_modules").get<std::set<std::string>>(),
              theirs.at("transformer.target_modules").get<std::set<std::string>>());

    const Batch batch = testing::readQwenImageBatch(goldenDir() + "/batch.safetensors");
    testing::expectSameOutputAndLoss(*model, batch, peft);
    const std::set<std::string> none = namesIn(metadataValue(peft, "grad_none"));
    const std::set<std::string> gradlessAdapters = gradless(peft);
    TrainSpec defaults;
    AdamWOptions options;
    options.beta1 = defaults.beta1;
    options.beta2 = defaults.beta2;
    options.eps = defaults.eps;
    options.weight_decay = defaults.weight_decay;
    options.fused = false;
    AdamW adam(options);
    // What the model declares backward never reaches, as the worker's buckets take it (no decay):
    // exactly the adapters PEFT's backward left without a gradient.
    const std::set<std::string> declared = parametersWithoutGradient(*model);
    std::set<std::string> undecayed;
    for (const AdaptedLayer& layer : applied.adapted)
        for (const char* which : {"lora_A", "lora_B"})
            if (declared.count(layer.module + "." + which + ".weight"))
                undecayed.insert(layer.published + "." + which + ".weight");
    EXPECT_EQ(undecayed, none);
    std::map<std::string, torch::Tensor> initial;
    for (auto& [key, p] : adapters) {
        initial[key] = p.detach().clone();
        EXPECT_EQ(!p.grad().defined(), gradlessAdapters.count(key) == 1) << key;
        if (p.grad().defined())
            EXPECT_LT(testing::relativeError(p.grad(), testing::readFloatTensor(peft, "grad." + key)), 1e-4) << key;
        // The step from PEFT's gradients: a first AdamW step moves a value by about lr g / (|g| + eps),
        // so where g is 1e-9 the rounding of fp32 sums decides it (the gradients agree above). A
        // trained parameter that backward does not reach holds zeros in the worker's gradient buckets.
        const torch::Tensor grad = peft.find("grad." + key) ? testing::readFloatTensor(peft, "grad." + key) : torch::zeros_like(p);
        adam.addGroup(p.detach().view({-1}), grad.view({-1}), /*decay=*/!undecayed.count(key));
    }
    adam.step(1e-3);
    for (auto& [key, p] : adapters) {
        if (none.count(key)) {
            // torch.optim.AdamW skips a parameter whose gradient is None (the last block's to_add_out
            // and txt_mlp adapters, which nothing reads), and so does the worker: zero gradients, no decay.
            EXPECT_TRUE(torch::equal(testing::readFloatTensor(peft, "updated." + key), initial[key])) << key;
            EXPECT_TRUE(torch::equal(p.detach(), initial[key])) << key;
            continue;
        }
        // A step moves each value by about lr: within a thousandth of it.
        EXPECT_TRUE(torch::allclose(p.detach(), testing::readFloatTensor(peft, "updated." + key), 0, 1e-6)) << key;
    }
}

// A LoRA the worker trained on this checkpoint (4 steps of lr 1e-2, r 4, alpha 8, the default
// targets), its pytorch_lora_weights.safetensors as the run wrote it, loaded by diffusers' own loader
// (check_qwen_image_lora.py: QwenImagePipeline.lora_state_dict, then load_lora_into_transformer):
// diffusers' output on the batch equals the worker's with the same adapter, and the worker writes
// the same file from those weights again.
TEST(QwenImageGolden, DiffusersLoadsTheWorkersLora) {
    const std::shared_ptr<Model> model = goldenModel();
    const std::string dir = goldenDir() + "/worker_lora";
    const SafetensorsFile lora(dir + "/" + kDiffusersLoraFile);
    AppliedFinetune applied;
    loadAdapters(*model, applied, lora, [](const std::string& key) { return "transformer." + key; });
    const Batch batch = testing::readQwenImageBatch(goldenDir() + "/batch.safetensors");
    const SafetensorsFile diffusers(dir + "/diffusers_output.safetensors");
    const torch::Tensor mine = testing::qwenImagePrediction(*model, batch);
    EXPECT_LT(testing::relativeError(mine, testing::readFloatTensor(diffusers, "output")), 1e-5);
    // The adapter matters: without it the output moves by more than a hundred times that.
    const SafetensorsFile golden(goldenDir() + "/golden.safetensors");
    EXPECT_GT(testing::relativeError(mine, testing::readFloatTensor(golden, "output")), 1e-3);

    testing::TempDir out;
    const FullTensor full = [&model](const std::string& name) { return model->named_parameters()[name].detach(); };
    AdapterBase base;
    base.diffusers = true;
    writeAdapterFolder(out.path(), applied, base, full);
    const SafetensorsFile again(out.path() + "/" + kDiffusersLoraFile);
    ASSERT_EQ(again.tensors().size(), lora.tensors().size());
    for (const TensorInfo& t : lora.tensors()) {
        ASSERT_NE(again.find(t.name), nullptr) << t.name;
        EXPECT_TRUE(torch::equal(testing::readFloatTensor(again, t.name), testing::readFloatTensor(lora, t.name))) << t.name;
    }
    auto written = nlohmann::json::parse(metadataValue(again, kDiffusersLoraMetadataKey));
    auto committed = nlohmann::json::parse(metadataValue(lora, kDiffusersLoraMetadataKey));
    written.erase("transformer.base_model_name_or_path");
    committed.erase("transformer.base_model_name_or_path");
    EXPECT_EQ(written, committed);
}

// Edit batches recorded by tests/golden/make_qwen_image_edit_golden.py on the same checkpoint: two
// reference images (4 x 2 and 1 x 3 packed) after a 3 x 5 grid, the second prompt padded; once as
// the checkpoint's config says (zero_cond_t false: Qwen-Image-Edit, Edit-2509) and once with
// zero_cond_t (Edit-2511), the same weights. Velocity, loss and gradients equal diffusers'.
TEST(QwenImageGolden, EditBatchesEqualDiffusers) {
    const Batch batch = testing::readQwenImageBatch(goldenDir() + "/edit/batch.safetensors");
    ASSERT_EQ(batch.reference_latents.size(), 2u);
    for (const bool zeroCondT : {false, true}) {
        SCOPED_TRACE(zeroCondT ? "zero_cond_t" : "without zero_cond_t");
        ModelDims dims = testing::qwenImageFolderDims(goldenDir() + "/transformer");
        ASSERT_FALSE(dims.zero_cond_t);
        dims.zero_cond_t = zeroCondT;
        const std::shared_ptr<Model> model = constructModel(dims);
        loadPublishedWeights(*model, goldenDir() + "/transformer");
        const SafetensorsFile golden(goldenDir() + "/edit/" +
                                     (zeroCondT ? "golden_zero_cond_t.safetensors" : "golden.safetensors"));
        EXPECT_EQ(metadataValue(golden, "zero_cond_t"), zeroCondT ? "true" : "false");
        EXPECT_TRUE(
            torch::allclose(packLatents(batch.noise - batch.images), testing::readFloatTensor(golden, "target")));
        testing::expectSameOutputAndLoss(*model, batch, golden);
        testing::expectSameGradients(*model, golden);
    }
}

} // namespace
} // namespace parallax
