#include "core/spec/Estimates.h"
#include "core/spec/SpecCompare.h"
#include "core/spec/SpecIO.h"
#include "core/spec/SpecValidator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

namespace parallax {
namespace {

namespace fs = std::filesystem;

// ctest sets PARALLAX_SOURCE_DIR; the folder this binary was configured from stands in when the
// binary is run by hand.
fs::path sourceDir() {
    const char* source = std::getenv("PARALLAX_SOURCE_DIR");
    return source && *source ? fs::path(source) : fs::path(PARALLAX_TEST_SOURCE_DIR);
}

fs::path runsDir() {
    return sourceDir() / "resources" / "runs";
}

std::vector<fs::path> exampleFiles() {
    std::vector<fs::path> files;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(runsDir(), ec))
        if (entry.path().extension() == ".toml") files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    return files;
}

TEST(ExampleSpecs, TheDocumentedExamplesAreThere) {
    std::vector<std::string> names;
    for (const fs::path& f : exampleFiles()) names.push_back(f.filename().string());
    for (const char* expected : {"quickstart.toml", "gpt-text-dp2.toml", "qwen-image-zero3-dp4.toml", "gpt-tp2-pp2.toml",
                                 "gpt-pp4-1f1b.toml", "gpt-1b-zero3-cuda.toml"})
        EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << expected << " is missing";
}

TEST(ExampleSpecs, EveryExampleValidatesAndRoundTrips) {
    const std::vector<fs::path> files = exampleFiles();
    ASSERT_FALSE(files.empty()) << "no .toml files in " << runsDir();
    for (const fs::path& file : files) {
        SCOPED_TRACE(file.string());
        std::vector<SpecIssue> unknown;
        const RunSpec spec = readSpecFile(file.string(), unknown);
        EXPECT_TRUE(unknown.empty()) << formatIssues(unknown);
        const auto issues = validateSpec(spec);
        EXPECT_TRUE(issues.empty()) << formatIssues(issues); // neither errors nor warnings
        EXPECT_EQ(spec.name, file.stem().string());          // the file is named after its run
        EXPECT_TRUE(parseSpec(toToml(spec)) == spec);
        const Estimates e = estimate(spec);
        EXPECT_GT(e.params, 0);
        EXPECT_GT(e.memory.total(), 0);
    }
}

TEST(ExampleSpecs, QuickstartIsTheDocumentedFirstRun) {
    const RunSpec s = readSpecFile((runsDir() / "quickstart.toml").string());
    EXPECT_EQ(s.name, "quickstart");
    EXPECT_EQ(s.model.kind, ModelKind::QwenImageVae);
    EXPECT_EQ(s.model.preset, "tiny");
    EXPECT_EQ(s.data.kind, DataKind::FashionMnist);
    EXPECT_EQ(s.parallel.dp, 2);
    EXPECT_EQ(s.worldSize(), 2);
    EXPECT_EQ(s.launch.device, Device::Cpu);
    EXPECT_EQ(s.launch.target, Target::Local);
    EXPECT_EQ(s.train.steps, 1000);
    EXPECT_EQ(s.train.global_batch, 16);
    EXPECT_EQ(s.train.micro_batch, 4);
    EXPECT_EQ(s.accumulation(), 2);
    EXPECT_EQ(s.train.lr, 2e-3);
    EXPECT_EQ(s.train.warmup, 10);
    EXPECT_EQ(s.train.checkpoint_every, 500);
    EXPECT_EQ(s.train.seed, 42u);
    EXPECT_EQ(s.telemetry.device_sample_ms, 250);
}

} // namespace
} // namespace parallax
