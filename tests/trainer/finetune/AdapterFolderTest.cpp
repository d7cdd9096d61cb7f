// The PEFT adapter folder a LoRA run writes, read by the reference of tests/reference (PEFT's
// mathematics over the folder's adapter_config.json and adapter_model.safetensors): the layer's
// output and gradients with the adapter, and the merged weight, equal this project's. Skips with a
// message where Debian's python3-torch is missing.

#include "core/formats/SafetensorsFile.h"
#include "core/formats/SafetensorsWriter.h"
#include "tests/support/Process.h"
#include "tests/trainer/support/ReferencePython.h"
#include "trainer/finetune/AdapterFolder.h"
#include "trainer/models/Linear.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <map>

namespace parallax {
namespace {

using testing::ProcessResult;
using testing::runProcess;

using testing::referenceAvailable;
constexpr const char* kPython = testing::kReferencePython;

torch::Tensor readTensor(const SafetensorsFile& file, const std::string& name) {
    return testing::readFloatTensor(file, name);
}

void writeTensors(const std::string& path, const std::map<std::string, torch::Tensor>& tensors) {
    std::vector<TensorData> data;
    for (const auto& [name, t] : tensors) data.push_back({name, Dtype::F32, t.sizes().vec(), t.data_ptr()});
    writeSafetensors(path, data);
}

// One adapted Linear at the path "layer", r 4, alpha `alpha`, as applyFinetune would describe it.
AppliedFinetune oneLayer(double alpha, bool rslora) {
    AppliedFinetune f;
    f.spec.mode = FinetuneMode::Lora;
    f.spec.lora_r = 4;
    f.spec.lora_alpha = alpha;
    f.spec.rslora = rslora;
    f.spec.lora_targets = {"layer"};
    f.scale = loraScale(f.spec);
    f.adapted = {{"layer", "layer", 6, 5}};
    return f;
}

void expectClose(const torch::Tensor& got, const torch::Tensor& want, const std::string& what) {
    ASSERT_EQ(got.sizes(), want.sizes()) << what;
    EXPECT_TRUE(torch::allclose(got, want, 1e-5, 1e-5)) << what << ": largest difference "
                                                        << (got - want).abs().max().item<double>();
}

void checkAgainstReference(double alpha, bool rslora) {
    testing::TempDir dir;
    torch::manual_seed(11);
    Linear layer(6, 5, true, 0.02);
    layer.weight.set_data(torch::randn({5, 6}));
    layer.bias.set_data(torch::randn({5}));
    layer.weight.set_requires_grad(false);
    layer.bias.set_requires_grad(false);
    const AppliedFinetune applied = oneLayer(alpha, rslora);
    auto a = std::make_shared<LoraFactor>(4, 6), b = std::make_shared<LoraFactor>(5, 4);
    a->weight.set_data(torch::randn({4, 6}));
    b->weight.set_data(torch::randn({5, 4})); // trained: B is no longer zero
    layer.adapter = std::make_shared<LoraAdapter>(a, b, applied.scale, 0.0);

    const std::map<std::string, torch::Tensor> params = {
        {"layer.weight", layer.weight.detach()}, {"layer.bias", layer.bias.detach()},
        {"layer.lora_A.weight", a->weight.detach()}, {"layer.lora_B.weight", b->weight.detach()}};
    const FullTensor full = [&params](const std::string& name) { return params.at(name); };
    writeAdapterFolder(dir.path() + "/adapter", applied, AdapterBase{}, full);

    const torch::Tensor x0 = torch::randn({2, 3, 6});
    const torch::Tensor dy = torch::randn({2, 3, 5});
    writeTensors(dir.path() + "/in.safetensors",
                 {{"weight", layer.weight.detach()}, {"bias", layer.bias.detach()}, {"x", x0}, {"dy", dy}});
    const ProcessResult ref =
        runProcess({kPython, ::parallax::testing::sourceDir() + "/tests/reference/lora_layer.py",
                    dir.path() + "/adapter", dir.path() + "/in.safetensors", dir.path() + "/out.safetensors"});
    ASSERT_EQ(ref.exitCode, 0) << ref.output;
    const SafetensorsFile out(dir.path() + "/out.safetensors");

    torch::Tensor x = x0.clone().requires_grad_(true);
    const torch::Tensor y = layer.forward(x);
    (y * dy).sum().backward();
    expectClose(y.detach(), readTensor(out, "y"), "y");
    expectClose(x.grad(), readTensor(out, "grad.x"), "grad.x");
    expectClose(a->weight.grad(), readTensor(out, "grad.lora_A"), "grad.lora_A");
    expectClose(b->weight.grad(), readTensor(out, "grad.lora_B"), "grad.lora_B");

    const torch::Tensor merged = mergedWeights(applied, full).at("layer.weight");
    expectClose(merged, readTensor(out, "merged_weight"), "merged_weight");
    expectClose(torch::linear(x0, merged, layer.bias.detach()), readTensor(out, "merged_y"), "merged_y");
}

TEST(AdapterFolder, PeftsMathematicsOverTheFolderGivesTheLayersOutputGradientsAndMerge) {
    if (!referenceAvailable()) GTEST_SKIP() << kPython << " cannot import torch: apt-get install python3-torch";
    checkAgainstReference(8, false);
}

TEST(AdapterFolder, RsloraAndAFractionalAlphaAreReadAsWritten) {
    if (!referenceAvailable()) GTEST_SKIP() << kPython << " cannot import torch: apt-get install python3-torch";
    checkAgainstReference(6.5, true);
}

// The files themselves: PEFT's keys and the config fields PEFT reads, nothing of the base weights.
TEST(AdapterFolder, HoldsTheAdaptersUnderPeftsKeysAndItsConfig) {
    testing::TempDir dir;
    AppliedFinetune applied = oneLayer(16, false);
    applied.spec.modules_to_save = {"lm_head"};
    applied.saved = {{"units.9.out.weight", "lm_head.weight"}};
    const std::map<std::string, torch::Tensor> params = {{"layer.lora_A.weight", torch::ones({4, 6})},
                                                         {"layer.lora_B.weight", torch::zeros({5, 4})},
                                                         {"units.9.out.weight", torch::full({3, 5}, 2.0)}};
    writeAdapterFolder(dir.path() + "/adapter", applied, AdapterBase{"/models/qwen", "CAUSAL_LM"},
                       [&params](const std::string& name) { return params.at(name); });

    const SafetensorsFile file(dir.path() + "/adapter/adapter_model.safetensors");
    std::vector<std::string> names;
    for (const TensorInfo& t : file.tensors()) names.push_back(t.name);
    std::sort(names.begin(), names.end());
    EXPECT_EQ(names, (std::vector<std::string>{"base_model.model.layer.lora_A.weight",
                                               "base_model.model.layer.lora_B.weight",
                                               "base_model.model.lm_head.weight"}));
    EXPECT_EQ(file.view("base_model.model.layer.lora_A.weight").shape, (std::vector<int64_t>{4, 6}));
    EXPECT_TRUE(torch::equal(readTensor(file, "base_model.model.lm_head.weight"), torch::full({3, 5}, 2.0)));

    std::ifstream in(dir.path() + "/adapter/adapter_config.json");
    const nlohmann::json config = nlohmann::json::parse(in);
    EXPECT_EQ(config.at("peft_type"), "LORA");
    EXPECT_EQ(config.at("r"), 4);
    EXPECT_TRUE(config.at("lora_alpha").is_number_integer()) << config.dump();
    EXPECT_EQ(config.at("lora_alpha"), 16);
    EXPECT_EQ(config.at("target_modules"), nlohmann::json({"layer"}));
    EXPECT_EQ(config.at("modules_to_save"), nlohmann::json({"lm_head"}));
    EXPECT_EQ(config.at("base_model_name_or_path"), "/models/qwen");
    EXPECT_EQ(config.at("task_type"), "CAUSAL_LM");
    EXPECT_EQ(config.at("bias"), "none");
}

} // namespace
} // namespace parallax
