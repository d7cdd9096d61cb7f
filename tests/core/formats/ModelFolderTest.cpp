// What a model folder says it is: transformers' config.json and diffusers' model_index.json.
#include "core/formats/FormatError.h"
#include "core/formats/ModelFolder.h"
#include "tests/core/formats/SafetensorsFiles.h"
#include "tests/support/Process.h"

#include <gtest/gtest.h>

using namespace parallax;
using namespace parallax::testing;

TEST(ModelFolder, ReadsTransformersConfig) {
    TempDir dir;
    writeBytes(dir.path() + "/config.json", R"({"architectures": ["Qwen2ForCausalLM"], "hidden_size": 896,
        "rope_scaling": null, "model_type": "qwen2", "torch_dtype": "bfloat16", "vision_config": {"depth": 32}})");
    const ModelFolder m = readModelFolder(dir.path());
    EXPECT_EQ(m.layout, "transformers");
    EXPECT_EQ(m.modelType, "qwen2");
    EXPECT_EQ(m.architectures, std::vector<std::string>{"Qwen2ForCausalLM"});
    EXPECT_EQ(describeModel(m), "qwen2 (Qwen2ForCausalLM)");
}

TEST(ModelFolder, ReadsDiffusersModelIndex) {
    TempDir dir;
    writeBytes(dir.path() + "/model_index.json", R"({"_class_name": "QwenImagePipeline", "_diffusers_version": "0.35.0",
        "scheduler": ["diffusers", "FlowMatchEulerDiscreteScheduler"], "text_encoder": ["transformers",
        "Qwen2_5_VLForConditionalGeneration"], "transformer": ["diffusers", "QwenImageTransformer2DModel"],
        "safety_checker": [null, null], "vae": ["diffusers", "AutoencoderKLQwenImage"]})");
    const ModelFolder m = readModelFolder(dir.path());
    EXPECT_EQ(m.layout, "diffusers");
    EXPECT_EQ(describeModel(m), "QwenImagePipeline");
    ASSERT_EQ(m.components.size(), 4u);
    EXPECT_EQ(m.components[2].name, "transformer");
    EXPECT_EQ(m.components[2].className, "QwenImageTransformer2DModel");
}

TEST(ModelFolder, NamesNothingWithoutConfigAndRefusesBadOnes) {
    TempDir dir;
    EXPECT_EQ(readModelFolder(dir.path()).layout, "");
    writeBytes(dir.path() + "/config.json", R"({"model_type": 3})");
    try {
        readModelFolder(dir.path());
        FAIL() << "read a model_type that is a number";
    } catch (const FormatError& e) {
        EXPECT_EQ(e.file(), dir.path() + "/config.json");
        EXPECT_NE(std::string(e.what()).find("\"model_type\" is a number, not a string"), std::string::npos);
    }
    writeBytes(dir.path() + "/config.json", "{\"a\":" + std::string(1000, '[') + std::string(1000, ']') + "}");
    EXPECT_THROW(readModelFolder(dir.path()), FormatError);
    writeBytes(dir.path() + "/config.json", "{\"model_type\": \"gpt2\",}");
    EXPECT_THROW(readModelFolder(dir.path()), FormatError);
}
