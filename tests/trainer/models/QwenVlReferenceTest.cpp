// The qwen2_5_vl kind against the independent PyTorch reference of tests/reference (written from
// the published modeling and processing code's mathematics): a checkpoint the reference wrote, in
// either published layout, loads into the worker's model, and two images of odd sizes, a
// left-padded sample and a text-only one give the same M-RoPE positions, image features, logits,
// loss and gradients within fp32 tolerance. Skips with a message where python3-torch is missing.

#include "core/formats/SafetensorsFile.h"
#include "core/formats/SafetensorsWriter.h"
#include "core/spec/ModelDims.h"
#include "tests/support/Process.h"
#include "tests/trainer/models/ModelTestSupport.h"
#include "tests/trainer/support/QwenCompare.h"
#include "tests/trainer/support/ReferencePython.h"
#include "trainer/models/Model.h"
#include "trainer/models/PublishedNames.h"
#include "trainer/models/PublishedWeights.h"
#include "trainer/models/QwenImageTokens.h"
#include "trainer/finetune/AdapterFolder.h"
#include "trainer/finetune/Finetune.h"
#include "trainer/train/AdamW.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>

namespace parallax {
namespace {

using testing::ProcessResult;
using testing::runProcess;

constexpr const char* kPython = testing::kReferencePython;

// A binary PPM of w x h: smooth colour ramps under noise, so that resizing and every patch matter.
void writePpm(const std::string& path, int w, int h, unsigned seed) {
    std::mt19937 random(seed);
    std::ofstream out(path, std::ios::binary);
    out << "P6\n" << w << " " << h << "\n255\n";
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
            const int noise = static_cast<int>(random() % 64);
            const unsigned char rgb[3] = {static_cast<unsigned char>((x * 255 / w + noise) % 256),
                                          static_cast<unsigned char>((y * 255 / h + 2 * noise) % 256),
                                          static_cast<unsigned char>((x + y + 3 * noise) % 256)};
            out.write(reinterpret_cast<const char*>(rgb), 3);
        }
}

ModelDims folderDims(const std::string& folder) {
    ModelSpec spec;
    spec.kind = ModelKind::Qwen2_5_Vl;
    spec.from = folder;
    return resolveModel(spec);
}

void makeCheckpoint(const std::string& folder, const std::vector<std::string>& extra = {}, bool tied = false) {
    std::vector<std::string> args = {kPython, testing::referenceScript("make_tiny_checkpoint.py"), folder, "--vocab-size", "1024"};
    if (!tied) args.push_back("--untied");
    args.insert(args.end(), extra.begin(), extra.end());
    const ProcessResult made = runProcess(args);
    ASSERT_EQ(made.exitCode, 0) << made.output;
}

// Three samples of 46 positions: text, image A (35 merged units), text; image B (12 units) left-padded;
// text only, right-padded. Labels on the text the model is to predict.
Batch visionBatch(const ModelDims& dims, const SafetensorsFile& pixels) {
    Batch b;
    b.pixel_values = testing::readFloatTensor(pixels, "pixel_values");
    b.image_grid = testing::readLongTensor(pixels, "image_grid_thw");
    const int64_t t = 46, vs = dims.tokens.vision_start, ve = dims.tokens.vision_end, pad = dims.tokens.image_pad;
    torch::manual_seed(11);
    b.tokens = torch::randint(0, 900, {3, t}, torch::kInt64);
    b.attention_mask = torch::ones({3, t}, torch::kBool);
    auto set = [&](int64_t s, int64_t from, int64_t count, int64_t value) {
        b.tokens.index_put_({s, torch::indexing::Slice(from, from + count)}, value);
    };
    set(0, 3, 1, vs);
    set(0, 4, 35, pad);
    set(0, 39, 1, ve);
    b.attention_mask.index_put_({1, torch::indexing::Slice(0, 22)}, false); // left padding
    set(1, 0, 22, 0);
    set(1, 22, 1, vs);
    set(1, 23, 12, pad);
    set(1, 35, 1, ve);
    b.attention_mask.index_put_({2, torch::indexing::Slice(30, t)}, false); // right padding
    set(2, 30, 16, 0);
    b.labels = b.tokens.clone();
    b.labels.masked_fill_(b.attention_mask.logical_not() | b.tokens.eq(pad) | b.tokens.eq(vs), -100);
    b.labels.index_put_({0, torch::indexing::Slice(0, 2)}, -100);
    b.sample_index = {0, 1, 2};
    b.positions = findImageTokens(b.tokens, b.attention_mask, b.image_grid, dims, b.sample_index).positions;
    return b;
}

void writeBatch(const Batch& b, const std::string& path) {
    const torch::Tensor mask = b.attention_mask.to(torch::kInt64).contiguous();
    const torch::Tensor pixels = b.pixel_values.contiguous(), grid = b.image_grid.contiguous();
    writeSafetensors(path, {{"input_ids", Dtype::I64, b.tokens.sizes().vec(), b.tokens.data_ptr()},
                            {"labels", Dtype::I64, b.labels.sizes().vec(), b.labels.data_ptr()},
                            {"attention_mask", Dtype::I64, mask.sizes().vec(), mask.data_ptr()},
                            {"pixel_values", Dtype::F32, pixels.sizes().vec(), pixels.data_ptr()},
                            {"image_grid_thw", Dtype::I64, grid.sizes().vec(), grid.data_ptr()}});
}

torch::Tensor anyTensor(const SafetensorsFile& file, const std::string& name) {
    return file.view(name).dtype == Dtype::I64 ? testing::readLongTensor(file, name) : testing::readFloatTensor(file, name);
}

class QwenVlReference : public ::testing::Test {
protected:
    void SetUp() override {
        if (!testing::referenceAvailable())
            GTEST_SKIP() << kPython << " cannot import torch: apt-get install python3-torch python3-pil";
    }
    testing::TempDir dir;
};

// The model of `folder` and the reference on the same batch: positions, image features, logits,
// loss and the gradients of `grads`.
void expectTheReferencesNumbers(const std::string& folder, const testing::TempDir& dir, const std::vector<std::string>& grads) {
    const ModelDims dims = folderDims(folder);
    const std::shared_ptr<Model> model = constructModel(dims);
    loadPublishedWeights(*model, folder);

    // 200 x 145 and 115 x 90 pixels: resized to 196 x 140 (four windows) and 112 x 84 (one).
    writePpm(dir.path() + "/a.ppm", 200, 145, 1);
    writePpm(dir.path() + "/b.ppm", 115, 90, 2);
    const ProcessResult processed = runProcess({kPython, testing::referenceScript("image_processor.py"), dir.path() + "/a.ppm",
                                                dir.path() + "/b.ppm", "-o", dir.path() + "/pixels.safetensors"});
    ASSERT_EQ(processed.exitCode, 0) << processed.output;
    const Batch batch = visionBatch(dims, SafetensorsFile(dir.path() + "/pixels.safetensors"));
    ASSERT_EQ(batch.image_grid.sum(0)[0].item<int64_t>(), 2);
    writeBatch(batch, dir.path() + "/batch.safetensors");

    std::string list;
    for (const std::string& n : grads) list += (list.empty() ? "" : ",") + n;
    const ProcessResult ref = runProcess({kPython, testing::referenceScript("run_reference.py"), folder, dir.path() + "/batch.safetensors",
                                          dir.path() + "/out.safetensors", "--grads", list});
    ASSERT_EQ(ref.exitCode, 0) << ref.output;
    const SafetensorsFile out(dir.path() + "/out.safetensors");

    EXPECT_TRUE(torch::equal(batch.positions, anyTensor(out, "position_ids").to(torch::kInt64)))
        << "M-RoPE positions differ:\n" << batch.positions << "\n" << anyTensor(out, "position_ids");
    {
        torch::NoGradGuard noGrad;
        Activation a;
        for (int64_t i = 0; model->unit(i)->kindName() != "embed"; ++i) a = model->unit(i)->forward(a, batch);
        EXPECT_LT(testing::relativeError(a.at(0), testing::readFloatTensor(out, "image_features")), 1e-5);
    }
    testing::expectEqualToReference(*model, batch, out, grads);
}

TEST_F(QwenVlReference, ImagesTextAndPaddingGiveTheReferencesNumbers) {
    const std::string folder = dir.path() + "/model";
    makeCheckpoint(folder);
    expectTheReferencesNumbers(folder, dir,
                               {"visual.patch_embed.proj.weight", "visual.blocks.0.attn.qkv.weight",
                                "visual.blocks.1.attn.proj.bias", "visual.blocks.1.mlp.down_proj.weight",
                                "visual.merger.mlp.0.weight", "visual.merger.ln_q.weight", "model.embed_tokens.weight",
                                "model.layers.0.self_attn.q_proj.weight", "model.layers.1.mlp.up_proj.weight",
                                "lm_head.weight"});
}

// The 3B's shape: lm_head tied to embed_tokens, the folder without lm_head.weight. The head's copy
// reads the embedding's values, and the two places' gradients together are the reference's one.
TEST_F(QwenVlReference, ATiedHeadGivesTheReferencesNumbers) {
    const std::string folder = dir.path() + "/model";
    makeCheckpoint(folder, {}, /*tied=*/true);
    ASSERT_TRUE(folderDims(folder).tie_embeddings);
    EXPECT_EQ(SafetensorsFile(folder + "/model.safetensors").find("lm_head.weight"), nullptr);
    expectTheReferencesNumbers(folder, dir, {"model.embed_tokens.weight", "model.layers.1.mlp.up_proj.weight"});
}

// The same weights written by transformers 4.52 and later (model.language_model.*, model.visual.*,
// the text sizes under text_config) in shards load to the same parameters as the Hub's layout.
TEST_F(QwenVlReference, BothPublishedLayoutsAndShardsLoadTheSameParameters) {
    makeCheckpoint(dir.path() + "/flat");
    makeCheckpoint(dir.path() + "/nested", {"--config-shape", "nested", "--layout", "current", "--max-shard-size", "400000"});
    ASSERT_TRUE(std::filesystem::exists(dir.path() + "/nested/model.safetensors.index.json"));
    const std::shared_ptr<Model> a = constructModel(folderDims(dir.path() + "/flat"));
    const std::shared_ptr<Model> b = constructModel(folderDims(dir.path() + "/nested"));
    loadPublishedWeights(*a, dir.path() + "/flat");
    loadPublishedWeights(*b, dir.path() + "/nested");
    const auto pa = publishedParameters(*a), pb = publishedParameters(*b);
    ASSERT_EQ(pa.size(), pb.size());
    for (size_t i = 0; i < pa.size(); ++i) EXPECT_TRUE(torch::equal(pa[i].second, pb[i].second)) << pa[i].first;
}

// A shard cut short is named with its file, before any parameter changes.
TEST_F(QwenVlReference, ATruncatedShardIsNamed) {
    const std::string folder = dir.path() + "/model";
    makeCheckpoint(folder, {"--max-shard-size", "400000"});
    std::string shard;
    for (const auto& entry : std::filesystem::directory_iterator(folder))
        if (entry.path().extension() == ".safetensors") shard = entry.path().string();
    ASSERT_FALSE(shard.empty());
    std::filesystem::resize_file(shard, std::filesystem::file_size(shard) / 2);
    const std::shared_ptr<Model> model = buildModel(folderDims(folder), 3);
    const torch::Tensor before = publishedParameters(*model).front().second.clone();
    try {
        loadPublishedWeights(*model, folder);
        FAIL() << "a truncated shard loaded";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find(std::filesystem::path(shard).filename().string()), std::string::npos) << e.what();
        EXPECT_EQ(std::string(e.what()).rfind("model.from = " + folder, 0), 0u) << e.what();
    }
    EXPECT_TRUE(torch::equal(before, publishedParameters(*model).front().second));
}

// The batch make_qwen2_5_vl_golden.py recorded (pixels from transformers' own image processor), with
// this model's M-RoPE positions.
Batch goldenBatch(const std::string& folder, const ModelDims& dims) {
    const SafetensorsFile inputs(folder + "/batch.safetensors");
    Batch batch;
    batch.tokens = testing::readLongTensor(inputs, "input_ids");
    batch.attention_mask = testing::readLongTensor(inputs, "attention_mask").to(torch::kBool);
    batch.labels = testing::readLongTensor(inputs, "labels");
    batch.pixel_values = testing::readFloatTensor(inputs, "pixel_values");
    batch.image_grid = testing::readLongTensor(inputs, "image_grid_thw");
    batch.sample_index = {0, 1, 2};
    batch.positions = findImageTokens(batch.tokens, batch.attention_mask, batch.image_grid, dims, batch.sample_index).positions;
    return batch;
}

// Golden outputs of transformers' own Qwen2_5_VLForConditionalGeneration (5.17, eager attention,
// float32, pixels from its Qwen2VLImageProcessorPil), made by tests/golden/make_qwen2_5_vl_golden.py
// on the GPU machine's CPU: its checkpoint and config as transformers saved them load into this
// model, and the same batch gives the same positions, image features, logits, loss and gradients.
TEST(QwenVlGolden, EqualsTransformersOnItsOwnCheckpoint) {
    const std::string folder = testing::sourceDir() + "/tests/golden/qwen2_5_vl";
    const ModelDims dims = folderDims(folder);
    const std::shared_ptr<Model> model = constructModel(dims);
    loadPublishedWeights(*model, folder);
    const Batch batch = goldenBatch(folder, dims);
    const SafetensorsFile golden(folder + "/golden.safetensors");
    // Positions of real tokens (under padding, releases differ: 1 before 5.x, 0 in 5.17; no real token reads them).
    const torch::Tensor real = batch.attention_mask.unsqueeze(0).expand_as(batch.positions);
    EXPECT_TRUE(torch::equal(batch.positions.masked_select(real),
                             testing::readLongTensor(golden, "position_ids").masked_select(real)));
    {
        torch::NoGradGuard noGrad;
        Activation a;
        for (int64_t i = 0; model->unit(i)->kindName() != "embed"; ++i) a = model->unit(i)->forward(a, batch);
        EXPECT_LT(testing::relativeError(a.at(0), testing::readFloatTensor(golden, "image_features")), 1e-5);
    }
    testing::expectEqualToReference(
        *model, batch, golden,
        {"visual.patch_embed.proj.weight", "visual.blocks.0.attn.qkv.weight", "visual.blocks.1.attn.proj.bias",
         "visual.blocks.1.mlp.down_proj.weight", "visual.merger.mlp.0.weight", "visual.merger.ln_q.weight",
         "model.embed_tokens.weight", "model.layers.0.self_attn.q_proj.weight", "model.layers.1.mlp.up_proj.weight",
         "lm_head.weight"},
        WeightLayout::Nested);
}

// One PEFT LoRA step (peft 0.21: r 4, alpha 8 on q/k/v/o of the language model, B drawn non-zero so
// that A has a gradient, torch.optim.AdamW with lr 1e-3) recorded by the same script: with PEFT's
// weights in its adapters, the worker's LoRA gives the same loss, adapter gradients and AdamW update.
TEST(QwenVlGolden, LoraStepEqualsPeft) {
    const std::string folder = testing::sourceDir() + "/tests/golden/qwen2_5_vl";
    const ModelDims dims = folderDims(folder);
    const std::shared_ptr<Model> model = constructModel(dims);
    loadPublishedWeights(*model, folder);
    FinetuneSpec f;
    f.mode = FinetuneMode::Lora;
    f.lora_r = 4;
    f.lora_alpha = 8;
    f.lora_targets = {"q_proj", "k_proj", "v_proj", "o_proj"};
    const AppliedFinetune applied = applyFinetune(*model, f, 1);
    ASSERT_EQ(applied.adapted.size(), 8u); // two decoder layers; the tower is frozen, its qkv is no target
    const SafetensorsFile peft(folder + "/lora.safetensors");
    auto params = model->named_parameters();
    std::vector<std::pair<torch::Tensor, std::string>> adapters; // parameter, PEFT's key
    for (const AdaptedLayer& layer : applied.adapted) {
        std::string module = layoutName(layer.published + ".weight", WeightLayout::Nested);
        module = module.substr(0, module.size() - std::string(".weight").size());
        for (const char* which : {"lora_A", "lora_B"}) {
            const std::string key = "base_model.model." + module + "." + which + ".default.weight";
            torch::Tensor p = params[layer.module + "." + which + ".weight"];
            torch::NoGradGuard noGrad;
            p.copy_(testing::readFloatTensor(peft, "lora." + key));
            adapters.emplace_back(p, key);
        }
    }
    const Batch batch = goldenBatch(folder, dims);
    const Activation out = model->forwardAll(batch);
    const torch::Tensor loss = out.at(0) / out.at(1);
    loss.backward();
    EXPECT_NEAR(loss.item<double>(), testing::readFloatTensor(peft, "loss").item<double>(), 1e-5);
    AdamWOptions options;
    options.beta2 = 0.999;
    options.weight_decay = 0;
    options.fused = false;
    AdamW adam(options);
    for (auto& [p, key] : adapters) {
        ASSERT_TRUE(p.grad().defined()) << key;
        EXPECT_LT(testing::relativeError(p.grad(), testing::readFloatTensor(peft, "grad." + key)), 1e-4) << key;
        adam.addGroup(p.view({-1}), p.grad().view({-1}), /*decay=*/false);
    }
    adam.step(1e-3);
    for (auto& [p, key] : adapters) // a step moves each value by about lr: within a thousandth of it
        EXPECT_TRUE(torch::allclose(p.detach(), testing::readFloatTensor(peft, "updated." + key), 0, 1e-6)) << key;

    // The adapter folder the worker writes names its tensors as PEFT saved its own (transformers 5's
    // module paths), so that PeftModel.from_pretrained finds every one.
    const FullTensor full = [&params](const std::string& name) { return params[name].detach(); };
    const auto mine = adapterTensors(applied, full, WeightLayout::Nested);
    const SafetensorsFile saved(folder + "/adapter/adapter_model.safetensors");
    ASSERT_EQ(mine.size(), saved.tensors().size());
    for (const TensorInfo& t : saved.tensors()) {
        ASSERT_TRUE(mine.count(t.name)) << t.name << " is not among the worker's adapter keys";
        EXPECT_EQ(mine.at(t.name).sizes().vec(), t.shape) << t.name;
    }
}

// A sample whose <|image_pad|> run is one short of its image's grid is named, as is a grid row no
// sample uses.
TEST(QwenImageTokens, PadsThatDisagreeWithTheGridNameTheSample) {
    ModelDims d = test::dimsOf(ModelKind::Qwen2_5_Vl, "tiny");
    const int64_t vs = d.tokens.vision_start, pad = d.tokens.image_pad;
    const torch::Tensor grid = torch::tensor({1, 4, 6}, torch::kInt64).view({1, 3}); // 6 merged units
    torch::Tensor tokens = torch::full({2, 10}, 7, torch::kInt64);
    tokens.index_put_({1, 1}, vs);
    tokens.index_put_({1, torch::indexing::Slice(2, 7)}, pad); // 5 pads, the image needs 6
    try {
        findImageTokens(tokens, {}, grid, d, {40, 41});
        FAIL() << "five pads passed for six units";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("sample 41"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("needs 6"), std::string::npos) << e.what();
    }
    tokens.index_put_({1, 7}, pad);
    const ImageTokens found = findImageTokens(tokens, {}, grid, d, {40, 41});
    EXPECT_EQ(found.imagesPerSample, (std::vector<int64_t>{0, 1}));
    // Text resumes one past the image's largest position: start 2 + max(2 rows, 3 columns).
    EXPECT_TRUE(torch::equal(found.positions.index({torch::indexing::Slice(), 1, 8}), torch::full({3}, 5, torch::kInt64)));
    const torch::Tensor two = torch::tensor({1, 4, 6, 1, 2, 2}, torch::kInt64).view({2, 3});
    EXPECT_THROW(findImageTokens(tokens, {}, two, d, {40, 41}), std::invalid_argument);
}

} // namespace
} // namespace parallax
