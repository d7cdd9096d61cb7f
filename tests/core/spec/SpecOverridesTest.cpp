#include "core/spec/SpecIO.h"
#include "core/spec/ModelDimensionEdits.h"
#include "core/spec/SpecOverrides.h"

#include <gtest/gtest.h>

namespace parallax {
namespace {

RunSpec base() {
    RunSpec s = parseSpec("name = \"base\"\n[model]\nkind = \"gpt\"\nlayers = 4\n[parallel]\ndp = 2\n"
                          "[launch]\nhosts = [\"a:1\"]\n",
                          "base.toml");
    return s;
}

TEST(SpecOverrides, SetsFieldsByPathWithTomlOrPlainValues) {
    const RunSpec s = applySpecOverrides(base(), {"parallel.dp=4", "parallel.tp = 2", "launch.target=slurm",
                                                  "launch.hosts=[\"x:8\", \"y:8\"]", "name=next", "train.lr=3e-4"});
    EXPECT_EQ(s.parallel.dp, 4);
    EXPECT_EQ(s.parallel.tp, 2);
    EXPECT_EQ(s.launch.target, Target::Slurm); // a plain word is a string
    EXPECT_EQ(s.launch.hosts, (std::vector<std::string>{"x:8", "y:8"}));
    EXPECT_EQ(s.name, "next");
    EXPECT_DOUBLE_EQ(s.train.lr, 3e-4);
    EXPECT_EQ(s.model.layers, 4) << "what is not set stays";
    EXPECT_EQ(applySpecOverrides(base(), {}).parallel.dp, 2);
}

TEST(SpecOverrides, AnUnknownFieldOrAWrongTypeIsAnErrorNamingTheEntry) {
    try {
        applySpecOverrides(base(), {"parallel.dpp=4"});
        FAIL();
    } catch (const SpecError& e) {
        EXPECT_NE(std::string(e.what()).find("--set parallel.dpp=4: parallel.dpp is no field of a spec"),
                  std::string::npos)
            << e.what();
    }
    EXPECT_THROW(applySpecOverrides(base(), {"parallel.dp"}), SpecError);
    try {
        applySpecOverrides(base(), {"parallel.dp=four"});
        FAIL();
    } catch (const SpecError& e) {
        EXPECT_NE(std::string(e.what()).find("parallel.dp"), std::string::npos) << e.what();
    }
}

TEST(SpecOverrides, ResumingChecksTheModelAndSaysWhatChangesTheNumbers) {
    const RunSpec parent = base();
    EXPECT_TRUE(resumeIssues(parent, applySpecOverrides(parent, {"parallel.dp=1", "train.micro_batch=2",
                                                                 "launch.target=slurm", "parallel.pp=2"}),
                             7)
                    .empty())
        << "layout, micro-batch and launcher change nothing the checkpoint holds";
    const auto model = resumeIssues(parent, applySpecOverrides(parent, {"model.layers=6"}), 7);
    ASSERT_EQ(model.size(), 1u);
    EXPECT_FALSE(model[0].warning);
    EXPECT_EQ(model[0].field, "model.layers");
    EXPECT_EQ(model[0].message, "model.layers = 6, but the checkpoint of run 7 holds a model with model.layers = 4; "
                                "a checkpoint loads only into the same model: keep model.layers = 4");
    const auto numbers = resumeIssues(parent, applySpecOverrides(parent, {"train.global_batch=64", "train.steps=50"}), 7);
    ASSERT_EQ(numbers.size(), 2u);
    for (const SpecIssue& i : numbers) EXPECT_TRUE(i.warning) << i.message;
    // In the order of the spec's fields.
    EXPECT_NE(numbers[0].message.find("the learning-rate schedule spans train.steps"), std::string::npos)
        << numbers[0].message;
    EXPECT_NE(numbers[1].message.find("train.global_batch = 64 where run 7 had"), std::string::npos)
        << numbers[1].message;
}

// A dimension written out at the value the preset gives it is the same model, however it is
// written; the message names the values the models have, never a blank for an unset field.
TEST(SpecOverrides, ADimensionSetToThePresetsValueIsTheSameModel) {
    RunSpec parent;
    parent.model.preset = "tiny";
    const int64_t layers = *resolvedDimension(parent, "model.layers");
    EXPECT_TRUE(resumeIssues(parent, applySpecOverrides(parent, {"model.layers=" + std::to_string(layers)}), 3).empty());
    RunSpec custom = parent;
    choosePreset(custom, "custom");
    EXPECT_TRUE(resumeIssues(parent, custom, 3).empty()) << "custom at the preset's dimensions";
    EXPECT_TRUE(resumeIssues(custom, parent, 3).empty());

    const auto changed = resumeIssues(parent, applySpecOverrides(parent, {"model.layers=" + std::to_string(layers + 1)}), 3);
    ASSERT_EQ(changed.size(), 1u);
    EXPECT_EQ(changed[0].message, "model.layers = " + std::to_string(layers + 1) +
                                      ", but the checkpoint of run 3 holds a model with model.layers = " +
                                      std::to_string(layers) + "; a checkpoint loads only into the same model: keep "
                                      "model.layers = " + std::to_string(layers));
    const auto preset = resumeIssues(parent, applySpecOverrides(parent, {"model.preset=small"}), 3);
    ASSERT_FALSE(preset.empty());
    for (const SpecIssue& i : preset) {
        EXPECT_FALSE(i.warning);
        EXPECT_EQ(i.message.find("= ;"), std::string::npos) << i.message;
    }
}

} // namespace
} // namespace parallax
