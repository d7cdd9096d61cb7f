// Qwen-Image's VAE config.json as the worker's VAE reads it: the published fields, and the fields it
// cannot honour refused naming the file and the key.

#include "core/spec/QwenImageVaeConfig.h"
#include "core/spec/QwenImageVaeModels.h"
#include "core/util/Files.h"
#include "tests/support/Process.h"

#include <gtest/gtest.h>

#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace parallax {
namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// readQwenImageVaeConfig's message for `folder`.
std::string readError(const std::string& folder) {
    try {
        readQwenImageVaeConfig(folder);
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "(read without an error)";
}

// config.json from raw JSON values by key; an empty value leaves the key out.
using Fields = std::map<std::string, std::string>;

std::string configText(const Fields& fields) {
    std::string text;
    for (const auto& [key, value] : fields)
        if (!value.empty()) text += (text.empty() ? "{" : ", ") + ("\"" + key + "\": ") + value;
    return text + "}";
}

const Fields kTiny = {{"_class_name", "\"AutoencoderKLQwenImage\""}, {"attn_scales", "[]"}, {"base_dim", "8"},
                      {"z_dim", "2"}, {"dim_mult", "[1, 2, 4, 4]"}, {"num_res_blocks", "1"},
                      {"temperal_downsample", "[false, true, true]"}, {"latents_mean", "[0.5, -0.25]"},
                      {"latents_std", "[1.5, 2.0]"}, {"_diffusers_version", "\"0.35.0\""}};

TEST(QwenImageVaeConfig, ReadsThePublishedFieldsAndNamesThoseItCannotHonour) {
    testing::TempDir dir;
    const std::string path = dir.path() + "/config.json";
    writeFileAtomic(path, configText(kTiny));
    const QwenImageVaeConfig config = readQwenImageVaeConfig(dir.path());
    EXPECT_EQ(config.path, path);
    EXPECT_EQ(config.spatialRatio(), 8);
    EXPECT_EQ(config.stageChannels(3), 32);
    EXPECT_EQ(config.temperal_downsample, (std::vector<bool>{false, true, true}));
    EXPECT_EQ(config.latents_mean, (std::vector<double>{0.5, -0.25}));
    EXPECT_EQ(config.latents_std, (std::vector<double>{1.5, 2.0}));

    const auto errorFor = [&](const Fields& changes) {
        Fields fields = kTiny;
        for (const auto& [key, value] : changes) fields[key] = value;
        writeFileAtomic(path, configText(fields));
        return readError(dir.path());
    };
    const std::vector<std::pair<Fields, std::string>> cases = {
        {{{"_class_name", "\"AutoencoderKLWan\""}}, path + ": \"_class_name\" is \"AutoencoderKLWan\""},
        {{{"attn_scales", "[1.0]"}}, "\"attn_scales\" is an array; it puts attention blocks among the encoder's stages"},
        {{{"latents_std", ""}}, "\"latents_std\" is missing; the published config lists 2 finite numbers"},
        {{{"latents_std", "[1.0, 0.0]"}}, "standard deviations must be positive"},
        {{{"latents_mean", "[1.0]"}}, "\"latents_mean\" is an array; it must list 2 finite numbers"},
        {{{"temperal_downsample", "[true, true]"}}, "\"temperal_downsample\" has 2 entries; the 4 stages"},
        {{{"temperal_downsample", "[1, 0, 0]"}}, "\"temperal_downsample\" holds 1, not true or false"},
        {{{"base_dim", "0"}}, "\"base_dim\" = 0 must be at least 1"},
        {{{"base_dim", "1048576"}}, "\"base_dim\" = 1048576 is more than any VAE has"},
        {{{"dim_mult", "[1, 2, 4, 40000]"}}, "stage 3 would have 40000 x base_dim 8 channels"},
        {{{"dim_mult", "[4]"}}, "\"dim_mult\" is an array; it lists each stage's channels"},
    };
    for (const auto& [changes, message] : cases) EXPECT_TRUE(has(errorFor(changes), message)) << errorFor(changes);

    testing::TempDir pipeline;
    writeFileAtomic(pipeline.path() + "/model_index.json", "{}");
    EXPECT_TRUE(has(readError(pipeline.path()), "without vae/config.json")) << readError(pipeline.path());
    EXPECT_TRUE(has(readError(dir.path() + "/nowhere"), "holds neither config.json")) << readError(dir.path() + "/nowhere");
    createDirectories(pipeline.path() + "/vae");
    writeFileAtomic(pipeline.path() + "/vae/config.json", configText(kTiny));
    EXPECT_EQ(readQwenImageVaeConfig(pipeline.path()).path, pipeline.path() + "/vae/config.json");
}

// The FLOPs a VAE's image costs, against the multiply-adds counted by running the PyTorch reference
// (tests/reference/qwen_image_vae.py: encode, then decode_raw of the mean) with F.conv2d, F.conv3d
// (one temporal tap, the one a still image meets) and torch.matmul instrumented to add up each
// output's elements times its reduction length: the tiny configuration at 32 x 32 and at 40 x 56,
// the published one (base_dim 96, two residual blocks) at 64 x 64.
TEST(QwenImageVaeModels, FlopsAreTheMultiplyAddsTheReferenceRuns) {
    QwenImageVaeConfig tiny;
    tiny.base_dim = 8;
    tiny.num_res_blocks = 1;
    const QwenImageVaeConfig published;
    const struct {
        const QwenImageVaeConfig& config;
        int64_t h, w;
        double encoderMacs, decoderMacs;
    } cases[] = {{tiny, 32, 32, 4808704, 11030528},
                 {tiny, 40, 56, 10561600, 24171840},
                 {published, 64, 64, 4767809536.0, 8397537280.0}};
    for (const auto& c : cases) {
        const VaeFlops f = qwenImageVaeForwardFlops(c.config, c.h, c.w);
        EXPECT_DOUBLE_EQ(f.encoder, 2 * c.encoderMacs) << c.config.base_dim << " at " << c.h << " x " << c.w;
        EXPECT_DOUBLE_EQ(f.decoder, 2 * c.decoderMacs) << c.config.base_dim << " at " << c.h << " x " << c.w;
    }
}

// config.json as written reads back to the same VAE.
TEST(QwenImageVaeModels, TheWrittenConfigReadsBack) {
    QwenImageVaeConfig c;
    c.base_dim = 8;
    c.num_res_blocks = 1;
    c.temperal_downsample = {false, false, true};
    c.latents_mean.assign(16, 0.25);
    c.latents_std.assign(16, 1.5);
    testing::TempDir dir;
    writeFileAtomic(dir.path() + "/config.json", qwenImageVaeConfigText(c));
    const QwenImageVaeConfig read = readQwenImageVaeConfig(dir.path());
    EXPECT_EQ(read.base_dim, 8);
    EXPECT_EQ(read.num_res_blocks, 1);
    EXPECT_EQ(read.dim_mult, c.dim_mult);
    EXPECT_EQ(read.temperal_downsample, c.temperal_downsample);
    EXPECT_EQ(read.latents_mean, c.latents_mean);
    EXPECT_EQ(read.latents_std, c.latents_std);
    const std::string text = qwenImageVaeConfigText(c);
    EXPECT_LT(text.find("\"_class_name\": \"AutoencoderKLQwenImage\""), text.find("\"attn_scales\": []"));
}

} // namespace
} // namespace parallax
