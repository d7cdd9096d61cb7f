// A 300-step LoRA run of the tiny Qwen-Image pipeline on images the test draws (a coloured disc or
// square on a plain ground, captioned so), through parallax-cli as a person starts it: the cache is
// made, the loss falls, and the run draws its samples at steps 0, 100, 200 and 300 into the store.
// With PARALLAX_KEEP_STORE set to a path, the store is copied there (for the console's screenshots).

#include "core/captions/LatentCache.h"
#include "core/formats/SafetensorsFile.h"
#include "core/store/RunStore.h"
#include "tests/core/conversations/PngFile.h"
#include "tests/trainer/cache/TinyPipeline.h"
#include "tests/trainer/support/SpecText.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numeric>

namespace parallax {
namespace {

using namespace testing;

struct Colour {
    const char* name;
    uint8_t r, g, b;
};
constexpr Colour kColours[] = {{"red", 220, 40, 40}, {"green", 40, 180, 70}, {"blue", 40, 70, 220}, {"yellow", 230, 210, 40}};
constexpr Colour kGrounds[] = {{"white", 245, 245, 245}, {"black", 15, 15, 15}};

// A 64 x 64 picture of a disc or a square of `shape` colour on `ground`.
std::vector<uint8_t> shapePicture(bool disc, const Colour& shape, const Colour& ground) {
    std::vector<uint8_t> rgb(64 * 64 * 3);
    for (int y = 0; y < 64; ++y)
        for (int x = 0; x < 64; ++x) {
            const int dx = x - 32, dy = y - 32;
            const bool inside = disc ? dx * dx + dy * dy < 18 * 18 : std::abs(dx) < 16 && std::abs(dy) < 16;
            const Colour& c = inside ? shape : ground;
            uint8_t* p = &rgb[static_cast<size_t>(y * 64 + x) * 3];
            p[0] = c.r;
            p[1] = c.g;
            p[2] = c.b;
        }
    return rgb;
}

// 16 images: every shape, colour and ground.
void drawDataset(const std::string& folder) {
    std::filesystem::create_directories(folder);
    int i = 0;
    for (bool disc : {true, false})
        for (const Colour& c : kColours)
            for (const Colour& g : kGrounds) {
                const std::string name = folder + "/shape" + std::to_string(i++);
                writePng(name + ".png", 64, 64, shapePicture(disc, c, g));
                std::ofstream(name + ".txt") << "a " << c.name << (disc ? " disc" : " square") << " on a " << g.name
                                             << " ground";
            }
}

double meanOf(const std::vector<double>& v, size_t from, size_t to) {
    return std::accumulate(v.begin() + static_cast<long>(from), v.begin() + static_cast<long>(to), 0.0) /
           static_cast<double>(to - from);
}

TEST(QwenImageLoraRun, ThreeHundredStepsLowerTheLossAndDrawSamples) {
    TinyPipeline& pipeline = sharedTinyPipeline();
    if (!pipeline.problem.empty()) GTEST_SKIP() << pipeline.problem;
    TempDir tmp;
    const std::string data = tmp.path() + "/shapes";
    drawDataset(data);
    TinySpec s;
    s.kind = "qwen_image";
    s.extraModel = "from = \"" + pipeline.path + "\"\nseq_len = 64";
    s.data = "latents";
    s.extraData = "path = \"" + data + "\"\nmax_pixels = 4096\nshuffle = true";
    s.finetune = "mode = \"lora\"\nlora_r = 8\nlora_alpha = 8";
    s.steps = 300;
    s.globalBatch = 4;
    s.microBatch = 4;
    s.lr = 3e-3; // for a visible fall in 300 steps
    const std::string spec = tmp.path() + "/spec.toml";
    std::ofstream(spec) << s.toToml() << "\n[samples]\nevery = 100\ncount = 2\nsteps = 8\n";

    const std::string cli = buildDir() + "/app/parallax-cli", store = tmp.path() + "/store.db";
    const ProcessResult cached = runProcess({cli, "cache", spec});
    ASSERT_EQ(cached.exitCode, 0) << cached.output;
    const ProcessResult ran = runProcess({cli, "--store", store, "run", spec});
    ASSERT_EQ(ran.exitCode, 0) << ran.output;

    const RunStore db(store);
    const std::vector<StepEvent> steps = db.metrics(1);
    ASSERT_EQ(steps.size(), 300u);
    std::vector<double> losses;
    for (const StepEvent& e : steps) losses.push_back(e.loss);
    const double first = meanOf(losses, 0, 30), last = meanOf(losses, 270, 300);
    EXPECT_LT(last, 0.8 * first) << "first 30 steps " << first << ", last 30 " << last;

    // Throughput counts the positions the batches fill: each 64 x 64 image is 16 packed latent tokens
    // (8 x 8 latents, 2 x 2 a token), each prompt its states; the first epoch (4 steps) holds all 16.
    const SafetensorsFile shard(latentCacheFolder(data) + "/" + cacheShardName(0));
    int64_t filled = 0;
    for (int i = 0; i < 16; ++i) filled += 16 + shard.find(cacheSampleName(i) + ".prompt_embeds")->shape.at(0);
    EXPECT_EQ(steps[3].tokens, filled);

    std::vector<std::pair<int64_t, int64_t>> drawn;
    for (const SampleEvent& e : db.events<SampleEvent>(1)) drawn.emplace_back(e.step, e.index);
    EXPECT_EQ(drawn, (std::vector<std::pair<int64_t, int64_t>>{
                         {0, 0}, {0, 1}, {100, 0}, {100, 1}, {200, 0}, {200, 1}, {300, 0}, {300, 1}}));
    if (const char* keep = std::getenv("PARALLAX_KEEP_STORE")) std::filesystem::copy_file(store, keep);
}

} // namespace
} // namespace parallax
