// model.kind = "qwen_image_vae" in a spec: its presets and dimensions (AutoencoderKLQwenImage's
// config), what the estimates count, the data it reads (images, no captions) and the layouts it
// takes (data parallelism and ZeRO; no tensor or pipeline split of its one unit).

#include "core/spec/Estimates.h"
#include "core/spec/ModelKinds.h"
#include "core/spec/QwenImageVaeModels.h"
#include "core/spec/SpecIO.h"
#include "core/spec/SpecValidator.h"
#include "tests/core/spec/IssueText.h"

#include <gtest/gtest.h>

namespace parallax {
namespace {

std::vector<SpecIssue> issuesOf(const std::string& toml) { return validateSpec(parseSpec(toml)); }

TEST(QwenImageVaeSpec, PresetsAreTheVaesConfigAndTheEstimatesCountIt) {
    ModelSpec m;
    m.kind = ModelKind::QwenImageVae;
    const ModelDims tiny = resolveModel(m);
    EXPECT_EQ(tiny.dim, 8);
    EXPECT_EQ(tiny.layers, 1);
    EXPECT_EQ(tiny.image_size, 32);
    EXPECT_EQ(tiny.patch, 8);
    EXPECT_EQ(tiny.z_dim, 16);
    const QwenImageVaeConfig config = qwenImageVaeConfigOf(tiny);
    int64_t held = 0;
    for (const ModelTensor& t : qwenImageVaeTensors(config)) held += t.elements();
    EXPECT_EQ(parameterCount(tiny), held);
    const VaeFlops f = qwenImageVaeForwardFlops(config, 32, 32);
    EXPECT_DOUBLE_EQ(forwardFlopsPerSample(tiny), f.encoder + f.decoder);
    EXPECT_EQ(tiny.tokensPerSample(), 16) << "an image counts its latent positions, 4 x 4";
    EXPECT_EQ(pipelineBlocks(tiny), 0);
    m.preset = "published";
    const ModelDims published = resolveModel(m);
    EXPECT_EQ(published.dim, 96);
    EXPECT_EQ(published.layers, 2);
    // The published VAE: 126.9M parameters (the time convolutions included).
    EXPECT_NEAR(double(parameterCount(published)), 126.9e6, 0.1e6);
    // A spec's heads or patch do not change the architecture.
    m.preset = "tiny";
    m.heads = 4;
    m.patch = 2;
    const ModelDims fixed = resolveModel(m);
    EXPECT_EQ(fixed.heads, 1);
    EXPECT_EQ(fixed.patch, 8);
}

TEST(QwenImageVaeSpec, ReadsImagesWithoutAVocabularyAndSpreadsByDataParallelismAlone) {
    EXPECT_FALSE(hasErrors(issuesOf("[model]\nkind = \"qwen_image_vae\"\n[data]\nkind = \"fashion-mnist\"\n"
                                    "[parallel]\ndp = 2\nzero = 3\n")));
    EXPECT_FALSE(hasErrors(issuesOf("[model]\nkind = \"qwen_image_vae\"\n")));
    auto issues = issuesOf("[model]\nkind = \"qwen_image_vae\"\n[data]\nkind = \"text\"\npath = \"/\"\n");
    EXPECT_TRUE(hasIssue(issues, "data.kind", "trains on images", false)) << describe(issues);
    issues = issuesOf("[model]\nkind = \"qwen_image_vae\"\n[parallel]\ntp = 2\n");
    EXPECT_TRUE(hasIssue(issues, "parallel.tp", "has no tensor-parallel split", false)) << describe(issues);
    issues = issuesOf("[model]\nkind = \"qwen_image_vae\"\n[parallel]\npp = 2\n");
    EXPECT_TRUE(hasIssue(issues, "parallel.pp", "is one unit, which a pipeline cannot cut", false)) << describe(issues);
    EXPECT_FALSE(hasIssue(issues, "parallel.pp", "blocks of the model", false)) << describe(issues);
    issues = issuesOf("[model]\nkind = \"qwen_image_vae\"\nimage_size = 30\n");
    EXPECT_TRUE(hasIssue(issues, "model.image_size", "is not a multiple of 8, the VAE's spatial ratio", false))
        << describe(issues);
    issues = issuesOf("[model]\nkind = \"qwen_image_vae\"\npatch = 4\nheads = 2\n");
    EXPECT_TRUE(hasIssue(issues, "model.patch", "is ignored for model.kind = \"qwen_image_vae\"", true)) << describe(issues);
    EXPECT_TRUE(hasIssue(issues, "model.heads", "its architecture fixes it", true)) << describe(issues);
}

} // namespace
} // namespace parallax
