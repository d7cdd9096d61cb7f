// parallax-cli inspect on folders as transformers and diffusers save them, and on a broken file.
#include "core/formats/CheckpointWriter.h"
#include "core/util/Files.h"
#include "tests/core/formats/SafetensorsFiles.h"
#include "tests/support/Process.h"

#include <gtest/gtest.h>

using namespace parallax;
using namespace parallax::testing;

namespace {

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

} // namespace

TEST(InspectCommand, ListsATransformersFolder) {
    TempDir dir;
    writeBytes(dir.path() + "/config.json", R"({"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2"})");
    const std::string embed(16 * 8 * 2, '\1'), norm(8 * 4, '\2'), step(8, '\3');
    CheckpointWriteOptions options;
    options.maxShardBytes = 200;
    writeCheckpoint(dir.path(),
                    {{"model.embed_tokens.weight", Dtype::BF16, {16, 8}, embed.data()},
                     {"model.norm.weight", Dtype::F32, {8}, norm.data()},
                     {"step", Dtype::I64, {}, step.data()}},
                    options);
    const ProcessResult r = runProcess({PARALLAX_CLI, "inspect", dir.path()});
    ASSERT_EQ(r.exitCode, 0) << r.output;
    EXPECT_TRUE(contains(r.output, "model:       transformers, qwen2 (Qwen2ForCausalLM)")) << r.output;
    EXPECT_TRUE(contains(r.output, "model.safetensors.index.json (2 shards)")) << r.output;
    EXPECT_TRUE(contains(r.output, "tensors:     3, 137 parameters (137), 296 B (296 bytes)")) << r.output;
    EXPECT_TRUE(contains(r.output, "BF16         1         128    256")) << r.output;
    EXPECT_TRUE(contains(r.output, "model.embed_tokens.weight  BF16   [16, 8]  model-00001-of-00002.safetensors"))
        << r.output;
    EXPECT_TRUE(contains(r.output, "step                       I64    []")) << r.output;
    const ProcessResult summary = runProcess({PARALLAX_CLI, "inspect", "--summary", dir.path()});
    ASSERT_EQ(summary.exitCode, 0) << summary.output;
    EXPECT_FALSE(contains(summary.output, "model.norm.weight")) << summary.output;
}

TEST(InspectCommand, ListsEachComponentOfADiffusersPipeline) {
    TempDir dir;
    writeBytes(dir.path() + "/model_index.json", R"({"_class_name": "QwenImagePipeline",
        "transformer": ["diffusers", "QwenImageTransformer2DModel"], "vae": ["diffusers", "AutoencoderKLQwenImage"],
        "scheduler": ["diffusers", "FlowMatchEulerDiscreteScheduler"]})");
    const std::string w(64, '\0');
    for (const char* component : {"transformer", "vae"}) {
        createDirectories(dir.path() + "/" + component);
        writeBytes(dir.path() + "/" + component + "/config.json",
                   std::string("{\"_class_name\": \"") + (component[0] == 't' ? "QwenImageTransformer2DModel" : "AutoencoderKLQwenImage") + "\"}");
        writeSafetensors(dir.path() + "/" + component + "/diffusion_pytorch_model.safetensors",
                         {{"proj.weight", Dtype::F16, {4, 8}, w.data()}});
    }
    const ProcessResult r = runProcess({PARALLAX_CLI, "inspect", "--summary", dir.path()});
    ASSERT_EQ(r.exitCode, 0) << r.output;
    EXPECT_TRUE(contains(r.output, "model:       diffusers, QwenImagePipeline")) << r.output;
    EXPECT_TRUE(contains(r.output, "component:   transformer (diffusers, QwenImageTransformer2DModel)")) << r.output;
    EXPECT_TRUE(contains(r.output, "component:   vae (diffusers, AutoencoderKLQwenImage)")) << r.output;
    EXPECT_TRUE(contains(r.output, "checkpoint:  diffusion_pytorch_model.safetensors")) << r.output;
}

TEST(InspectCommand, NamesTheFileAndTensorOfABrokenCheckpoint) {
    TempDir dir;
    const std::string path = dir.path() + "/model.safetensors";
    writeBytes(path, safetensorsBytes(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", "12345678"));
    const ProcessResult r = runProcess({PARALLAX_CLI, "inspect", dir.path()});
    EXPECT_EQ(r.exitCode, 4) << r.output;
    EXPECT_TRUE(contains(r.output, "parallax-cli: " + path + ": tensor \"w\": shape [3] of F32 takes 12 bytes"))
        << r.output;
    const ProcessResult missing = runProcess({PARALLAX_CLI, "inspect", dir.path() + "/nothing"});
    EXPECT_EQ(missing.exitCode, 4) << missing.output;
    EXPECT_TRUE(contains(missing.output, dir.path() + "/nothing: cannot open it")) << missing.output;
}
