// The qwen2 kind against the independent PyTorch reference of tests/reference (written from the
// published modeling code's mathematics): the same weights and batch give the same logits, loss
// and gradients within fp32 tolerance. Skips with a message where Debian's python3-torch is missing.

#include "core/formats/SafetensorsFile.h"
#include "core/formats/SafetensorsWriter.h"
#include "tests/support/Process.h"
#include "tests/trainer/support/QwenCompare.h"
#include "tests/trainer/support/ReferencePython.h"
#include "trainer/models/Model.h"
#include "trainer/models/PublishedNames.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstring>
#include <fstream>
#include <map>

namespace parallax {
namespace {

using testing::ProcessResult;
using testing::runProcess;

using testing::expectEqualToReference;
using testing::referenceAvailable;
constexpr const char* kPython = testing::kReferencePython;

// Grouped-query attention (4 heads over 2 key/value heads), untied head, 2 layers.
ModelDims tinyQwen2() {
    ModelDims d;
    d.kind = ModelKind::Qwen2;
    d.layers = 2;
    d.dim = 64;
    d.heads = 4;
    d.kv_heads = 2;
    d.ffn = 96;
    d.vocab = 300;
    d.seq_len = 12;
    d.rope_theta = 1000000.0;
    d.rms_eps = 1e-6;
    d.max_positions = 128;
    return d;
}

void writeFolder(const Model& model, const std::string& dir) {
    const ModelDims& d = model.dims();
    const nlohmann::json config = {
        {"architectures", {"Qwen2ForCausalLM"}}, {"model_type", "qwen2"}, {"hidden_size", d.dim},
        {"num_hidden_layers", d.layers}, {"num_attention_heads", d.heads}, {"num_key_value_heads", d.kv_heads},
        {"intermediate_size", d.ffn}, {"vocab_size", d.vocab}, {"rms_norm_eps", d.rms_eps},
        {"rope_theta", d.rope_theta}, {"max_position_embeddings", d.max_positions},
        {"tie_word_embeddings", false}, {"hidden_act", "silu"}, {"torch_dtype", "float32"}};
    std::ofstream(dir + "/config.json") << config.dump(2);
    const auto named = publishedParameters(model);
    std::vector<torch::Tensor> keep;
    std::vector<TensorData> tensors;
    for (const auto& [name, tensor] : named) {
        keep.push_back(tensor.detach().contiguous());
        tensors.push_back({name, Dtype::F32, keep.back().sizes().vec(), keep.back().data_ptr()});
    }
    writeSafetensors(dir + "/model.safetensors", tensors, {{"format", "pt"}});
}

void writeBatch(const Batch& batch, const std::string& path) {
    const torch::Tensor mask = batch.attention_mask.to(torch::kInt64).contiguous();
    const std::vector<TensorData> tensors = {
        {"input_ids", Dtype::I64, batch.tokens.sizes().vec(), batch.tokens.data_ptr()},
        {"labels", Dtype::I64, batch.labels.sizes().vec(), batch.labels.data_ptr()},
        {"attention_mask", Dtype::I64, mask.sizes().vec(), mask.data_ptr()}};
    writeSafetensors(path, tensors);
}

torch::Tensor readTensor(const SafetensorsFile& file, const std::string& name) {
    return testing::readFloatTensor(file, name);
}

const std::vector<std::string> kGradNames = {"model.embed_tokens.weight", "model.layers.0.self_attn.q_proj.weight",
                                             "model.layers.1.self_attn.k_proj.bias", "model.layers.1.mlp.down_proj.weight",
                                             "model.norm.weight", "lm_head.weight"};

// `model` (written to `dir` as a folder) on `batch` against the reference's logits, loss and
// kGradNames' gradients on `written` (the batch as transformers would get it).
void expectTheReferencesNumbers(Model& model, const Batch& batch, const Batch& written, const std::string& dir) {
    writeBatch(written, dir + "/batch.safetensors");
    std::string grads;
    for (const std::string& n : kGradNames) grads += (grads.empty() ? "" : ",") + n;
    const ProcessResult ref = runProcess({kPython, testing::sourceDir() + "/tests/reference/run_reference.py", dir,
                                          dir + "/batch.safetensors", dir + "/out.safetensors", "--grads", grads});
    ASSERT_EQ(ref.exitCode, 0) << ref.output;
    expectEqualToReference(model, batch, SafetensorsFile(dir + "/out.safetensors"), kGradNames);
}

// Two samples of random tokens, each its own labels, and no mask.
Batch twoSamples(const ModelDims& dims, uint64_t seed) {
    Batch batch;
    torch::manual_seed(seed);
    batch.tokens = torch::randint(0, dims.vocab, {2, dims.seq_len}, torch::kInt64);
    batch.labels = batch.tokens.clone();
    batch.sample_index = {0, 1};
    return batch;
}

TEST(QwenReference, Qwen2LogitsLossAndGradientsEqualTheReference) {
    if (!referenceAvailable()) GTEST_SKIP() << kPython << " cannot import torch: apt-get install python3-torch";
    testing::TempDir dir;
    const ModelDims dims = tinyQwen2();
    const std::shared_ptr<Model> model = buildModel(dims, 1234);
    writeFolder(*model, dir.path());

    // The second sample padded on the right; labels on some positions only.
    Batch batch = twoSamples(dims, 5);
    batch.attention_mask = torch::ones({2, dims.seq_len}, torch::kBool);
    batch.attention_mask.index_put_({1, torch::indexing::Slice(8, torch::indexing::None)}, false);
    batch.labels.index_put_({0, torch::indexing::Slice(0, 3)}, -100);
    batch.labels.masked_fill_(batch.attention_mask.logical_not(), -100);
    expectTheReferencesNumbers(*model, batch, batch, dir.path());
}

// A batch that pads nothing carries no mask (the datasets leave it out): attention then takes the
// causal flag alone, and a later token must still reach no earlier one. The reference is given the
// all-ones mask transformers would get.
TEST(QwenReference, Qwen2WithoutAMaskIsCausalAsTheReference) {
    if (!referenceAvailable()) GTEST_SKIP() << kPython << " cannot import torch: apt-get install python3-torch";
    testing::TempDir dir;
    const std::shared_ptr<Model> model = buildModel(tinyQwen2(), 4321);
    writeFolder(*model, dir.path());
    const Batch batch = twoSamples(model->dims(), 6);
    Batch written = batch;
    written.attention_mask = torch::ones(batch.tokens.sizes(), torch::kBool);
    ASSERT_FALSE(batch.attention_mask.defined());
    expectTheReferencesNumbers(*model, batch, written, dir.path());
}

// Golden outputs of transformers' own Qwen2ForCausalLM (5.17, eager attention, float32), made by
// tests/golden/make_qwen2_golden.py on the GPU machine's CPU: its checkpoint, under transformers'
// names, loaded into this model gives the same logits, loss and gradients.
TEST(QwenReference, Qwen2EqualsTransformersOnItsOwnCheckpoint) {
    const std::string dir = testing::sourceDir() + "/tests/golden/qwen2";
    const SafetensorsFile weights(dir + "/model.safetensors");
    const std::shared_ptr<Model> model = constructModel(tinyQwen2());
    {
        torch::NoGradGuard noGrad;
        size_t loaded = 0;
        for (auto& [name, tensor] : publishedParameters(*model)) {
            const torch::Tensor saved = readTensor(weights, name);
            ASSERT_EQ(saved.sizes(), tensor.sizes()) << name;
            tensor.copy_(saved);
            ++loaded;
        }
        EXPECT_EQ(loaded, weights.tensors().size()) << "every tensor of the checkpoint is a parameter";
    }
    const SafetensorsFile batchFile(dir + "/batch.safetensors");
    const auto ints = [&batchFile](const std::string& name) {
        const TensorView v = batchFile.view(name);
        return torch::from_blob(const_cast<std::byte*>(v.data), v.shape, torch::kInt64).clone();
    };
    Batch batch;
    batch.tokens = ints("input_ids");
    batch.attention_mask = ints("attention_mask").to(torch::kBool);
    batch.labels = ints("labels");
    batch.sample_index = {0, 1};
    expectEqualToReference(*model, batch, SafetensorsFile(dir + "/golden.safetensors"),
                           {"model.embed_tokens.weight", "model.layers.0.self_attn.q_proj.weight",
                            "model.layers.1.self_attn.k_proj.bias", "model.layers.1.mlp.down_proj.weight",
                            "model.norm.weight", "lm_head.weight"});
}

} // namespace
} // namespace parallax
