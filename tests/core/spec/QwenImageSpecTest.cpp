// model.kind = "qwen_image" in a spec: what it reads (latents), its folder's config (diffusers'
// transformer config.json, alone or under a pipeline folder), its default LoRA targets and its size.

#include "core/spec/Estimates.h"
#include "core/spec/ModelConfigFile.h"
#include "core/spec/ModelKinds.h"
#include "core/spec/SpecIO.h"
#include "core/spec/SpecValidator.h"
#include "tests/core/spec/IssueText.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

namespace parallax {
namespace {

std::vector<SpecIssue> issuesOf(const std::string& toml) { return validateSpec(parseSpec(toml)); }


TEST(QwenImageSpec, ReadsLatentsOrSyntheticDataAndNothingElseDoes) {
    auto issues = issuesOf("[model]\nkind = \"qwen_image\"\n[data]\nkind = \"text\"\npath = \"a.txt\"\n");
    EXPECT_TRUE(hasIssue(issues, "data.kind", "trains on VAE latents and prompt states: use data.kind = \"latents\"", false))
        << describe(issues);
    issues = issuesOf("[model]\nkind = \"gpt\"\n[data]\nkind = \"latents\"\npath = \"/tmp\"\n");
    EXPECT_TRUE(hasIssue(issues, "data.kind", "which model.kind = \"gpt\" cannot read; use model.kind = \"qwen_image\"", false))
        << describe(issues);
    issues = issuesOf("[model]\nkind = \"qwen_image\"\n[data]\nkind = \"latents\"\n");
    EXPECT_TRUE(hasIssue(issues, "data.path", "data.path is empty; data.kind = \"latents\" reads an image-caption", false))
        << describe(issues);
    issues = issuesOf("[model]\nkind = \"qwen_image\"\n[data]\nkind = \"latents\"\npath = \"/nowhere/metadata.csv\"\n");
    EXPECT_TRUE(hasIssue(issues, "data.path", "\"/nowhere/metadata.csv\" does not exist", false)) << describe(issues);
    // max_pixels is the aspect buckets' budget there: no warning, and at least one 16 x 16 bucket.
    issues = issuesOf("[model]\nkind = \"qwen_image\"\n[data]\nkind = \"latents\"\npath = \"/tmp\"\nmax_pixels = 4096\n");
    EXPECT_TRUE(issues.empty()) << describe(issues);
    issues = issuesOf("[model]\nkind = \"qwen_image\"\n[data]\nkind = \"latents\"\npath = \"/tmp\"\nmax_pixels = 100\n");
    EXPECT_TRUE(hasIssue(issues, "data.max_pixels", "16 x 16 aspect bucket", false)) << describe(issues);
    issues = issuesOf("[model]\nkind = \"qwen_image\"\n[data]\nkind = \"synthetic\"\n");
    EXPECT_TRUE(issues.empty()) << describe(issues);
    // Image folders are for the kinds that read pixels.
    issues = issuesOf("[model]\nkind = \"gpt\"\n[data]\nkind = \"image-folder\"\npath = \"/tmp\"\n");
    EXPECT_TRUE(hasIssue(issues, "data.kind", "model.kind = \"qwen_image_vae\"", false)) << describe(issues);
}

TEST(QwenImageSpec, LoraTargetsDefaultToDiffSynthsAndOthersStayAsWritten) {
    const RunSpec spec = parseSpec("[model]\nkind = \"qwen_image\"\n[finetune]\nmode = \"lora\"\n");
    EXPECT_EQ(spec.finetune.lora_targets.front(), "to_q");
    EXPECT_EQ(spec.finetune.lora_targets.size(), 12u);
    EXPECT_TRUE(issuesOf("[model]\nkind = \"qwen_image\"\n[finetune]\nmode = \"lora\"\n").empty());
    // A full run of it warns about nothing it did not write.
    EXPECT_TRUE(issuesOf("[model]\nkind = \"qwen_image\"\n").empty());
    const RunSpec own = parseSpec("[model]\nkind = \"qwen_image\"\n[finetune]\nmode = \"lora\"\nlora_targets = [\"to_q\"]\n");
    EXPECT_EQ(own.finetune.lora_targets, std::vector<std::string>{"to_q"});
    const auto issues = issuesOf("[model]\nkind = \"qwen_image\"\n[finetune]\nmode = \"lora\"\nlora_targets = [\"q_proj\"]\n");
    EXPECT_TRUE(hasIssue(issues, "finetune.lora_targets", "is no Linear of model.kind = \"qwen_image\"", false))
        << describe(issues);
    EXPECT_EQ(parseSpec("[model]\nkind = \"qwen2\"\n").finetune.lora_targets, FinetuneSpec().lora_targets);
}

// The published transformer: 60 blocks of 24 heads of 128, prompt states of 3584: 20,430,401,088
// parameters in 1,933 tensors, as the independent reference (tests/reference/qwen_image.py) builds
// diffusers' state dict for the published config.
TEST(QwenImageSpec, ThePublishedSizeHoldsThePublishedParameters) {
    ModelSpec m;
    m.kind = ModelKind::QwenImage;
    m.preset = "20b";
    const ModelDims d = resolveModel(m);
    EXPECT_EQ(parameterCount(d), 20430401088);
    EXPECT_EQ(modelKindInfo(ModelKind::QwenImage).tensors(d).size(), 1933u);
}

class QwenImageFolderConfig : public ::testing::Test {
protected:
    std::string dir = ::testing::TempDir() + "qwen-image-config-" + std::to_string(::getpid());
    void TearDown() override { std::filesystem::remove_all(dir); }
    // A pipeline folder whose transformer/config.json is `config`.
    std::string pipeline(const std::string& name, const std::string& config) {
        const std::string root = dir + "/" + name;
        std::filesystem::create_directories(root + "/transformer");
        std::ofstream(root + "/model_index.json") << R"({"_class_name": "QwenImagePipeline", "transformer": ["diffusers", "QwenImageTransformer2DModel"]})";
        std::ofstream(root + "/transformer/config.json") << config;
        return root;
    }
};

const char* const kConfig = R"({"_class_name": "QwenImageTransformer2DModel", "_diffusers_version": "0.35.1",
  "patch_size": 2, "in_channels": 64, "out_channels": 16, "num_layers": 60, "attention_head_dim": 128,
  "num_attention_heads": 24, "joint_attention_dim": 3584, "guidance_embeds": false, "axes_dims_rope": [16, 56, 56]})";

TEST_F(QwenImageFolderConfig, APipelineFolderGivesTheTransformersSizes) {
    const std::string folder = pipeline("ok", kConfig);
    const ModelConfigFile config = readModelConfig(folder);
    EXPECT_EQ(config.path, folder + "/transformer/config.json");
    EXPECT_EQ(config.dims.kind, ModelKind::QwenImage);
    EXPECT_EQ(config.dims.layers, 60);
    EXPECT_EQ(config.dims.dim, 3072);
    EXPECT_EQ(config.dims.text_dim, 3584);
    EXPECT_EQ(config.dims.mrope_section, (std::vector<int64_t>{8, 28, 28}));
    RunSpec spec;
    spec.model.kind = ModelKind::QwenImage;
    spec.model.from = folder;
    const ModelDims d = resolveModel(spec.model);
    EXPECT_EQ(parameterCount(d), 20430401088);
    spec.model.text_dim = 4096;
    EXPECT_THROW(resolveModel(spec.model), std::invalid_argument);
}

TEST_F(QwenImageFolderConfig, VariantsAndBrokenAxesAreNamed) {
    auto errorOf = [](const std::string& folder) -> std::string {
        try {
            readModelConfig(folder);
        } catch (const std::invalid_argument& e) {
            return e.what();
        }
        return "";
    };
    std::string text = kConfig;
    const std::string guided = pipeline("guided", std::string(text).replace(text.find("\"guidance_embeds\": false"), 24,
                                                                           "\"guidance_embeds\": true"));
    EXPECT_NE(errorOf(guided).find("\"guidance_embeds\" is true"), std::string::npos) << errorOf(guided);
    const std::string axes = pipeline("axes", std::string(text).replace(text.find("[16, 56, 56]"), 12, "[16, 56, 48]"));
    EXPECT_NE(errorOf(axes).find("\"axes_dims_rope\" sums to 120, not attention_head_dim = 128"), std::string::npos)
        << errorOf(axes);
    const std::string packed = pipeline("packed", std::string(text).replace(text.find("\"in_channels\": 64"), 17,
                                                                           "\"in_channels\": 16"));
    EXPECT_NE(errorOf(packed).find("in_channels = 4 x out_channels"), std::string::npos) << errorOf(packed);
}

} // namespace
} // namespace parallax
