// A checkpoint records the model it was written for, each dimension its kind reads: resuming or
// exporting it against a model that differs in any of them (the vision tower's MLP width, the key/
// value heads) is refused naming the field; a manifest written before a dimension was recorded
// still reads, that dimension unchecked.

#include "core/util/Files.h"
#include "tests/trainer/support/QwenData.h"
#include "tests/trainer/support/WorkerRun.h"
#include "trainer/train/Checkpoint.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>

using namespace parallax;
using namespace parallax::testing;
using nlohmann::json;

namespace {

std::string refusal(const CheckpointReader& reader, const ModelDims& dims) {
    try {
        reader.requireCompatible(dims);
    } catch (const CheckpointError& e) {
        return e.what();
    }
    return "";
}

TEST(CheckpointModel, AQwenCheckpointNamesTheDimensionThatDiffers) {
    ASSERT_TRUE(QwenData::get().problem.empty()) << QwenData::get().problem; // made by tests/reference
    TempDir dir;
    TinySpec spec = qwenConversationSpec(/*lora=*/false);
    spec.steps = 1;
    spec.checkpointEvery = 1;
    const WorkerRun run = runWorker(spec.toToml(), 1, dir.path() + "/run");
    ASSERT_EQ(run.exitCode, 0) << run.output;
    const std::string checkpoint = run.lastCheckpoint();
    ASSERT_FALSE(checkpoint.empty());

    const json model = json::parse(readFile(joinPath(checkpoint, "manifest.json"))).at("model");
    const CheckpointReader reader(checkpoint);
    const ModelDims saved = reader.meta().dims;
    // The tiny folder's vision_config.intermediate_size and num_key_value_heads, as saved.
    EXPECT_EQ(model.at("vision_ffn").get<int64_t>(), saved.vision_ffn);
    EXPECT_GT(saved.vision_ffn, 0);
    EXPECT_NE(saved.vision_ffn, 4 * saved.vision_dim) << "the tiny tower's MLP is not 4 x its width";
    EXPECT_GT(saved.kv_heads, 0);
    EXPECT_EQ(refusal(reader, saved), "");

    ModelDims wider = saved;
    wider.vision_ffn += 16;
    EXPECT_NE(refusal(reader, wider).find("model.vision_ffn = " + std::to_string(saved.vision_ffn)), std::string::npos)
        << refusal(reader, wider);
    ModelDims fewerHeads = saved;
    fewerHeads.kv_heads = 1 + saved.kv_heads;
    EXPECT_NE(refusal(reader, fewerHeads).find("model.kv_heads"), std::string::npos) << refusal(reader, fewerHeads);

    // A manifest from before vision_ffn and kv_heads were recorded: read, and not compared on them.
    json manifest = json::parse(readFile(joinPath(checkpoint, "manifest.json")));
    manifest.at("model").erase("vision_ffn");
    manifest.at("model").erase("kv_heads");
    std::ofstream(joinPath(checkpoint, "manifest.json")) << manifest.dump(1);
    const CheckpointReader older(checkpoint);
    EXPECT_EQ(refusal(older, wider), "");
    EXPECT_EQ(refusal(older, fewerHeads), "");
    ModelDims deeper = saved;
    deeper.layers += 1;
    EXPECT_NE(refusal(older, deeper).find("model.layers"), std::string::npos);
}

} // namespace
