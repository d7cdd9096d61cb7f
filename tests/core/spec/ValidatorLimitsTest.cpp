#include "core/spec/CheckedMath.h"
#include "core/spec/Estimates.h"
#include "core/spec/SpecIO.h"
#include "core/spec/SpecLimits.h"
#include "core/spec/SpecValidator.h"

#include "tests/core/spec/IssueText.h"

#include <gtest/gtest.h>

#include <chrono>
#include <limits>

namespace parallax {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

// Validates and estimates `text`, and returns the issues; fails when it takes a second or more.
std::vector<SpecIssue> validateQuickly(const std::string& text) {
    const auto start = std::chrono::steady_clock::now();
    const RunSpec spec = parseSpec(text, "case.toml");
    std::vector<SpecIssue> issues = validateSpec(spec);
    try {
        estimate(spec);
    } catch (const std::invalid_argument&) {
        // An unusable model is the validator's to report.
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_LT(seconds, 1.0) << text;
    return issues;
}

// Issue 17: dp * micro_batch overflowed to 0 and the divisibility check divided by it (SIGFPE in
// check and run).
TEST(ValidatorLimits, AHugeDpIsAnErrorNotADivisionByZero) {
    const auto issues = validateQuickly("[parallel]\ndp = 4611686018427387904\n");
    EXPECT_TRUE(hasIssue(issues, "parallel.dp",
                         "parallel.dp = 4611686018427387904 is more than 1048576 (2^20), the most Parallax accepts",
                         false))
        << describe(issues);
    for (const char* text : {"[parallel]\ndp = 4611686018427387904\n[train]\nmicro_batch = 4\nglobal_batch = 0\n",
                             "[parallel]\ndp = -9223372036854775808\n[train]\nmicro_batch = -1\n",
                             "[parallel]\ndp = 2147483648\ntp = 2147483648\npp = 4\n",
                             "[parallel]\npp = 9223372036854775807\nvirtual_stages = 9223372036854775807\nschedule = "
                             "\"interleaved\"\n"})
        EXPECT_TRUE(hasErrors(validateQuickly(text))) << text;
}

// Issue 17: listing the divisors of a huge prime width looped for ever (here and in the console's
// live validation).
TEST(ValidatorLimits, AHugePrimeWidthIsAnErrorNotAHang) {
    const auto issues = validateQuickly("[model]\ndim = 999999999999999989\nheads = 2\n");
    EXPECT_TRUE(hasIssue(issues, "model.dim", "model.dim = 999999999999999989 is more than 1048576 (2^20)", false))
        << describe(issues);
    // A prime within the limit still gets its (short) list of divisors at once.
    const auto prime = validateQuickly("[model]\ndim = 1048573\nheads = 2\n");
    EXPECT_TRUE(hasIssue(prime, "model.heads", "use heads among 1, 1048573 (each head", false)) << describe(prime);
}

TEST(ValidatorLimits, EveryLimitIsAnErrorNamingTheFieldAndTheBound) {
    for (const FieldLimit& limit : fieldLimits()) {
        SCOPED_TRACE(limit.field);
        const std::string field = limit.field;
        const std::string section = field.substr(0, field.find('.'));
        const std::string key = field.substr(field.find('.') + 1);
        std::string text = "[" + section + "]\n" + key + " = " + std::to_string(limit.most + 1) + "\n";
        if (section == "model" && (key == "kv_heads" || key.rfind("vision", 0) == 0)) text += "kind = \"qwen2_5_vl\"\n";
        else if (section == "model" && (key == "text_dim" || key == "image_size" || key == "channels" || key == "patch"))
            text += "kind = \"qwen_image\"\n";
        if (section == "finetune") text += "mode = \"lora\"\n[model]\nkind = \"qwen2\"\n";
        const auto issues = validateQuickly(text);
        EXPECT_TRUE(hasIssue(issues, field, field + " = " + std::to_string(limit.most + 1) + " is more than " +
                                                limitText(limit.most),
                             false))
            << describe(issues);
        EXPECT_TRUE(countProblem(field, limit.most, 0).empty());
    }
    EXPECT_EQ(limitText(int64_t(1) << 20), "1048576 (2^20)");
    EXPECT_EQ(limitText(3600000), "3600000");
}

TEST(ValidatorLimits, AWorldOfMoreThanTheProcessLimitIsAnError) {
    const auto issues = validateQuickly("[parallel]\ndp = 1024\ntp = 1024\npp = 2\n");
    EXPECT_TRUE(hasIssue(issues, "parallel.dp", "parallel.dp * tp * pp = 1024 * 1024 * 2 = 2097152 processes is more than "
                                                "1048576 (2^20)",
                         false))
        << describe(issues);
}

TEST(ValidatorLimits, FloatsThatAreNotFiniteAreErrors) {
    for (const char* field : {"lr", "min_lr", "weight_decay", "beta1", "beta2", "eps", "grad_clip"}) {
        for (const char* value : {"nan", "inf", "-inf"}) {
            const std::string text = std::string("[train]\n") + field + " = " + value + "\n";
            EXPECT_TRUE(hasIssue(validateQuickly(text), std::string("train.") + field, "", false)) << text;
        }
    }
    for (const char* value : {"nan", "inf", "1e300"})
        EXPECT_TRUE(hasIssue(validateQuickly(std::string("[parallel]\nbucket_mb = ") + value + "\n"), "parallel.bucket_mb",
                             "", false))
            << value;
}

TEST(ValidatorLimits, EstimatesRefuseUnusableNumbersInsteadOfOverflowing) {
    RunSpec s;
    s.model.dim = kMax;
    EXPECT_THROW(estimate(s), std::invalid_argument);
    s = RunSpec{};
    s.model.layers = int64_t(1) << 40; // would build 10^12 units
    EXPECT_THROW(estimate(s), std::invalid_argument);
    s = RunSpec{};
    s.parallel.pp = kMax;
    EXPECT_THROW(estimate(s), std::invalid_argument);
    s = RunSpec{};
    s.parallel.pp = 1000; // more stages than blocks: only stage 0 is estimated
    const Estimates e = estimate(s);
    EXPECT_EQ(e.memory_per_stage.size(), 1u);
    s = RunSpec{};
    s.train.global_batch = kMax;
    s.train.micro_batch = 1;
    EXPECT_GT(estimate(s).tokens_per_step, 0);
}

TEST(ValidatorLimits, StageLayersThatOverflowTheirSum) {
    const auto issues = validateQuickly("[parallel]\npp = 2\nstage_layers = [9223372036854775807, 9223372036854775807]\n");
    EXPECT_TRUE(hasIssue(issues, "parallel.stage_layers", "adds up to more than 2^63 blocks", false)) << describe(issues);
}

TEST(ValidatorLimits, CheckedArithmetic) {
    EXPECT_EQ(checkedMul(kMax, 2), std::nullopt);
    EXPECT_EQ(checkedMul(int64_t(1) << 62, 4), std::nullopt); // the product that wrapped to 0
    EXPECT_EQ(checkedMul(3, 4), 12);
    EXPECT_EQ(checkedAdd(kMax, 1), std::nullopt);
    EXPECT_EQ(checkedSub(kMin, 1), std::nullopt);
    EXPECT_EQ(checkedDiv(kMin, -1), std::nullopt);
    EXPECT_EQ(checkedDiv(7, 0), std::nullopt);
    EXPECT_EQ(checkedMod(kMin, -1), 0);
    EXPECT_EQ(checkedMod(7, 0), std::nullopt);
    EXPECT_EQ(saturatingMul(int64_t(1) << 62, 4), kMax);
    EXPECT_EQ(saturatingMul(kMin, 2), kMin);
    EXPECT_EQ(saturatingAdd(kMax, kMax), kMax);

    RunSpec s;
    s.parallel.dp = int64_t(1) << 62;
    s.parallel.tp = 4;
    EXPECT_EQ(s.worldSize(), kMax);
    s.train.micro_batch = 4;
    EXPECT_EQ(s.accumulation(), 0);
}

// Issue 17: docs/spec.md promised warnings for unknown keys and sections; nothing reported them.
TEST(ValidatorLimits, UnknownKeysAndSectionsAreWarningsWithTheNearestName) {
    const auto issues = validateQuickly("[train]\nstpes = 10\n[paralel]\ndp = 2\n");
    EXPECT_FALSE(hasErrors(issues));
    EXPECT_TRUE(hasIssue(issues, "train.stpes", "train.stpes: unknown key; did you mean train.steps?", true))
        << describe(issues);
    EXPECT_TRUE(hasIssue(issues, "paralel", "[paralel]: unknown section; did you mean [parallel]?", true))
        << describe(issues);
    const std::string printed = formatIssues(issues);
    EXPECT_NE(printed.find("warning: train.stpes: unknown key; did you mean train.steps?"), std::string::npos) << printed;
    EXPECT_NE(printed.find("warning: [paralel]: unknown section; did you mean [parallel]?"), std::string::npos)
        << printed;
}

} // namespace
} // namespace parallax
