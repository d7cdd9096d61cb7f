// [samples]: read and written, validated with messages naming the field and the way out, and ignored
// (with a warning) by kinds that draw no images.
#include "core/spec/SpecIO.h"
#include "core/spec/SpecValidator.h"
#include "tests/core/spec/IssueText.h"
#include "tests/support/Process.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace parallax {
namespace {

using testing::TempDir;

std::vector<SpecIssue> samplesIssues(const RunSpec& spec) {
    std::vector<SpecIssue> out;
    for (const SpecIssue& i : validateSpec(spec))
        if (i.field.rfind("samples.", 0) == 0) out.push_back(i);
    return out;
}

RunSpec qwenImage(const std::string& samples, const std::string& from = "") {
    return parseSpec("[model]\nkind = \"qwen_image\"\npreset = \"tiny\"\n" +
                     (from.empty() ? std::string() : "from = \"" + from + "\"\n") + "[samples]\n" + samples);
}

// A pipeline folder as far as the VAE check reads it: model_index.json and vae/config.json.
std::string pipelineFolder(const TempDir& tmp, bool withVae) {
    const std::string dir = tmp.path() + (withVae ? "/pipeline" : "/no-vae");
    std::filesystem::create_directories(dir + "/vae");
    std::ofstream(dir + "/model_index.json") << "{}";
    if (withVae) std::ofstream(dir + "/vae/config.json") << "{}";
    return dir;
}

TEST(SampleChecks, RoundTripsAndIsWrittenOnlyWhereItApplies) {
    const RunSpec spec = qwenImage("every = 50\ncount = 4\nsteps = 30\n");
    EXPECT_EQ(spec.samples.every, 50);
    EXPECT_EQ(spec.samples.count, 4);
    EXPECT_EQ(spec.samples.steps, 30);
    const RunSpec again = parseSpec(toToml(spec));
    EXPECT_EQ(again.samples.every, 50);
    EXPECT_EQ(again.samples.count, 4);
    EXPECT_EQ(again.samples.steps, 30);
    EXPECT_EQ(toToml(parseSpec("[model]\nkind = \"gpt\"\n")).find("[samples]"), std::string::npos);
}

TEST(SampleChecks, NeedAVaeAWholeTransformerAndCountsInRange) {
    TempDir tmp;
    const std::string pipeline = pipelineFolder(tmp, true);
    EXPECT_TRUE(samplesIssues(qwenImage("every = 10\n", pipeline)).empty())
        << describe(samplesIssues(qwenImage("every = 10\n", pipeline)));
    EXPECT_TRUE(samplesIssues(qwenImage("every = 0\n")).empty());

    auto issues = samplesIssues(qwenImage("every = 10\n"));
    EXPECT_TRUE(hasIssue(issues, "samples.every", "without model.from (random initialization) there is none", false))
        << describe(issues);
    issues = samplesIssues(qwenImage("every = 10\n", pipelineFolder(tmp, false)));
    EXPECT_TRUE(hasIssue(issues, "samples.every", "without vae/config.json", false)) << describe(issues);

    RunSpec split = qwenImage("every = 10\n", pipeline);
    split.parallel.pp = 2;
    split.parallel.zero = 3;
    issues = samplesIssues(split);
    EXPECT_TRUE(hasIssue(issues, "samples.every", "parallel.pp = 2 splits over stages; use pp = 1", false))
        << describe(issues);
    EXPECT_TRUE(hasIssue(issues, "samples.every", "parallel.zero = 3 shards; use zero = 2 or less", false))
        << describe(issues);

    issues = samplesIssues(qwenImage("every = 10\ncount = 17\nsteps = 1\n", pipeline));
    EXPECT_TRUE(hasIssue(issues, "samples.count", "samples.count = 17 is outside 1 to 16", false)) << describe(issues);
    EXPECT_TRUE(hasIssue(issues, "samples.steps", "samples.steps = 1 is outside 2 to 200", false)) << describe(issues);
    issues = samplesIssues(qwenImage("every = -1\n"));
    EXPECT_TRUE(hasIssue(issues, "samples.every", "must be 0 (no samples) or a number of steps", false))
        << describe(issues);
}

TEST(SampleChecks, OtherKindsIgnoreThemWithAWarning) {
    const auto issues = samplesIssues(parseSpec("[model]\nkind = \"gpt\"\n[samples]\nevery = 5\n"));
    EXPECT_TRUE(hasIssue(issues, "samples.every", "model.kind = \"gpt\" draws no images", true)) << describe(issues);
}

} // namespace
} // namespace parallax
