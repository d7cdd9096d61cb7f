// A model folder's weights against the parameters its config declares, from the safetensors headers:
// both published layouts, one file or shards with their index; a missing tensor, a wrong shape and
// a broken or missing shard are named.
#include "core/formats/CheckpointWriter.h"
#include "core/formats/ModelWeights.h"
#include "core/spec/ModelConfigFile.h"
#include "core/spec/ModelKinds.h"
#include "tests/core/formats/SafetensorsFiles.h"
#include "tests/support/Process.h"

#include <gtest/gtest.h>

#include <unistd.h>

using namespace parallax;
using namespace parallax::testing;

namespace {

// A small Qwen2.5-VL: 2 layers of 64 (4 heads, 2 key/value heads), a vocabulary of 300, a tower of
// 2 blocks of 32.
const char* const kConfig = R"({"model_type": "qwen2_5_vl", "hidden_size": 64, "intermediate_size": 128,
  "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 300,
  "rope_theta": 1000000.0, "rms_norm_eps": 1e-06, "tie_word_embeddings": false,
  "rope_scaling": {"type": "mrope", "mrope_section": [2, 3, 3]},
  "vision_config": {"depth": 2, "hidden_size": 32, "num_heads": 2, "intermediate_size": 48, "out_hidden_size": 64,
    "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2, "window_size": 56,
    "fullatt_block_indexes": [1]}})";

struct Folder {
    TempDir dir;
    ModelDims dims;
    std::vector<ModelTensor> expected;
    std::vector<std::vector<uint16_t>> buffers; // bf16 zeros, alive while written

    Folder() {
        writeBytes(dir.path() + "/config.json", kConfig);
        dims = readModelConfig(dir.path()).dims;
        expected = modelKindInfo(dims.kind).tensors(dims);
    }

    // Every expected tensor in `layout` (less `skip`, with `reshape`'s shape instead), in shards of
    // at most `shardBytes`.
    void write(WeightLayout layout, uint64_t shardBytes, const std::string& skip = "",
               const std::string& reshape = "", std::vector<int64_t> shape = {}) {
        std::vector<TensorData> tensors;
        buffers.clear();
        buffers.reserve(expected.size());
        for (const ModelTensor& t : expected) {
            if (t.name == skip) continue;
            TensorData data{layoutName(t.name, layout), Dtype::BF16, t.name == reshape ? shape : t.shape, nullptr};
            int64_t n = 1;
            for (int64_t d : data.shape) n *= d;
            buffers.emplace_back(size_t(n), uint16_t(0));
            data.data = buffers.back().data();
            tensors.push_back(data);
        }
        CheckpointWriteOptions options;
        options.maxShardBytes = shardBytes;
        writeCheckpoint(dir.path(), tensors, options);
    }
};

std::string joined(const std::vector<std::string>& lines) {
    std::string text;
    for (const std::string& l : lines) text += l + "\n";
    return text;
}

} // namespace

TEST(ModelWeights, EitherPublishedLayoutInOneFileOrShardsHoldsEveryTensor) {
    Folder one;
    one.write(WeightLayout::Flat, 5'000'000'000);
    ModelWeightsCheck check = checkModelWeights(one.dir.path(), one.dims);
    EXPECT_TRUE(check.ok()) << joined(check.problems);
    EXPECT_EQ(check.layout, WeightLayout::Flat);
    EXPECT_EQ(check.files, std::vector<std::string>{"model.safetensors"});
    EXPECT_EQ(check.expected, one.expected.size());
    EXPECT_EQ(check.found, one.expected.size());

    Folder sharded;
    sharded.write(WeightLayout::Nested, 40'000); // the embedding and head (38,400 bytes each) take one each
    check = checkModelWeights(sharded.dir.path(), sharded.dims);
    EXPECT_TRUE(check.ok()) << joined(check.problems);
    EXPECT_EQ(check.layout, WeightLayout::Nested);
    EXPECT_GT(check.files.size(), 2u);
    EXPECT_EQ(check.found, sharded.expected.size());
}

TEST(ModelWeights, AMissingTensorAndAWrongShapeAreNamed) {
    Folder f;
    f.write(WeightLayout::Flat, 5'000'000'000, "model.layers.1.mlp.down_proj.weight", "visual.blocks.0.attn.qkv.weight",
            {96, 31});
    const ModelWeightsCheck check = checkModelWeights(f.dir.path(), f.dims);
    ASSERT_EQ(check.problems.size(), 2u) << joined(check.problems);
    EXPECT_EQ(check.problems[0], f.dir.path() + "/model.safetensors: tensor \"visual.blocks.0.attn.qkv.weight\" has "
                                                "shape [96, 31]; the model's config gives [96, 32]");
    EXPECT_EQ(check.problems[1], f.dir.path() + ": tensor \"model.layers.1.mlp.down_proj.weight\" [64, 128] is missing "
                                                "from the weights (named as model.* / visual.*)");
    EXPECT_EQ(check.found, f.expected.size() - 2);
}

TEST(ModelWeights, ABrokenOrMissingShardIsNamed) {
    Folder f;
    f.write(WeightLayout::Flat, 40'000);
    const ModelWeightsCheck whole = checkModelWeights(f.dir.path(), f.dims);
    ASSERT_TRUE(whole.ok()) << joined(whole.problems);
    ASSERT_GE(whole.files.size(), 3u);
    const std::string truncated = f.dir.path() + "/" + whole.files[1];
    ASSERT_EQ(::truncate(truncated.c_str(), 100), 0);
    const std::string removed = f.dir.path() + "/" + whole.files[2];
    ASSERT_EQ(::unlink(removed.c_str()), 0);
    const ModelWeightsCheck check = checkModelWeights(f.dir.path(), f.dims);
    const std::string text = joined(check.problems);
    EXPECT_NE(text.find(truncated + ": "), std::string::npos) << text;
    EXPECT_NE(text.find(removed + ": "), std::string::npos) << text;
    EXPECT_LT(check.found, f.expected.size());

    TempDir empty;
    const ModelWeightsCheck none = checkModelWeights(empty.path(), f.dims);
    ASSERT_EQ(none.problems.size(), 1u);
    EXPECT_EQ(none.problems[0], empty.path() + " holds neither model.safetensors.index.json nor model.safetensors: "
                                               "no weights to start from (a folder from the Hugging Face Hub holds them)");

    ModelDims gpt;
    EXPECT_THROW(checkModelWeights(empty.path(), gpt), std::invalid_argument);
}
