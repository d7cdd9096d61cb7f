#include "core/spec/SpecIO.h"
#include "core/spec/SpecValidator.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace parallax {
namespace {

const SpecIssue* issueOf(const std::vector<SpecIssue>& issues, const std::string& field) {
    for (const SpecIssue& i : issues)
        if (i.field == field) return &i;
    return nullptr;
}

std::string describe(const std::vector<SpecIssue>& issues) {
    std::string out;
    for (const SpecIssue& i : issues) out += i.field + ": " + i.message + "\n";
    return out;
}

TEST(RetentionSpec, DefaultsSuitARunOfAThousandRanks) {
    const RunSpec spec;
    EXPECT_EQ(spec.retention.output_segment_mb, 256);
    EXPECT_EQ(spec.retention.output_keep_mb, 2048);
    EXPECT_EQ(spec.retention.raw_telemetry_minutes, 60);
    EXPECT_EQ(spec.retention.disk_budget_gb, 0.0);
    // Written as every section whose fields always matter, and validated without a word about it.
    EXPECT_NE(toToml(spec).find("\n[retention]\noutput_segment_mb = 256\noutput_keep_mb = 2048\n"
                                "raw_telemetry_minutes = 60\ndisk_budget_gb = 0"),
              std::string::npos)
        << toToml(spec);
    for (const SpecIssue& i : validateSpec(spec)) EXPECT_NE(i.field.rfind("retention.", 0), 0u) << i.message;
}

TEST(RetentionSpec, ReadsWritesAndReadsBackEveryField) {
    const RunSpec spec = parseSpec("[retention]\noutput_segment_mb = 64\noutput_keep_mb = 512\n"
                                   "raw_telemetry_minutes = 15\ndisk_budget_gb = 250.5\n");
    EXPECT_EQ(spec.retention.output_segment_mb, 64);
    EXPECT_EQ(spec.retention.output_keep_mb, 512);
    EXPECT_EQ(spec.retention.raw_telemetry_minutes, 15);
    EXPECT_DOUBLE_EQ(spec.retention.disk_budget_gb, 250.5);
    const std::string text = toToml(spec);
    EXPECT_NE(text.find("[retention]\n"), std::string::npos) << text;
    EXPECT_NE(text.find("output_segment_mb = 64\n"), std::string::npos) << text;
    EXPECT_NE(text.find("disk_budget_gb = 250.5\n"), std::string::npos) << text;
    const RunSpec again = parseSpec(text);
    EXPECT_EQ(again.retention.output_segment_mb, 64);
    EXPECT_EQ(again.retention.output_keep_mb, 512);
    EXPECT_EQ(again.retention.raw_telemetry_minutes, 15);
    EXPECT_DOUBLE_EQ(again.retention.disk_budget_gb, 250.5);
    EXPECT_TRUE(validateSpec(again).empty()) << describe(validateSpec(again));
}

TEST(RetentionSpec, AValueOfTheWrongTypeIsAnErrorNamingTheField) {
    try {
        parseSpec("[retention]\noutput_segment_mb = \"big\"\n");
        FAIL() << "a string for an integer was read";
    } catch (const SpecError& e) {
        EXPECT_NE(std::string(e.what()).find("retention.output_segment_mb"), std::string::npos) << e.what();
    }
}

TEST(RetentionSpec, ValuesOutOfRangeAreErrorsNamingTheFieldAndTheWayOut) {
    const auto issues = validateSpec(parseSpec("[retention]\noutput_segment_mb = 0\noutput_keep_mb = -1\n"
                                               "raw_telemetry_minutes = 0\ndisk_budget_gb = -2\n"));
    struct Expected {
        const char* field;
        const char* text;
    };
    for (const Expected& x : {Expected{"retention.output_segment_mb", "retention.output_segment_mb = 0 must be at least 1"},
                              Expected{"retention.output_keep_mb", "retention.output_keep_mb = -1 must be 0 (keep every"},
                              Expected{"retention.raw_telemetry_minutes",
                                       "retention.raw_telemetry_minutes = 0 must be at least 1"},
                              Expected{"retention.disk_budget_gb", "retention.disk_budget_gb = -2 must be 0 (no budget)"}}) {
        const SpecIssue* issue = issueOf(issues, x.field);
        ASSERT_NE(issue, nullptr) << x.field << "\n" << describe(issues);
        EXPECT_FALSE(issue->warning);
        EXPECT_NE(issue->message.find(x.text), std::string::npos) << issue->message;
    }
    // Past a field's limit: the limit's error.
    const auto huge = validateSpec(parseSpec("[retention]\nraw_telemetry_minutes = 600000\n"));
    const SpecIssue* limit = issueOf(huge, "retention.raw_telemetry_minutes");
    ASSERT_NE(limit, nullptr) << describe(huge);
    EXPECT_NE(limit->message.find("is more than 525600"), std::string::npos) << limit->message;
}

TEST(RetentionSpec, ABudgetTheKeptOutputFillsAloneIsAWarning) {
    const auto issues = validateSpec(parseSpec("[retention]\noutput_keep_mb = 4096\ndisk_budget_gb = 2\n"));
    const SpecIssue* issue = issueOf(issues, "retention.disk_budget_gb");
    ASSERT_NE(issue, nullptr) << describe(issues);
    EXPECT_TRUE(issue->warning);
    EXPECT_NE(issue->message.find("at most the output kept alone (retention.output_keep_mb = 4096 MiB)"),
              std::string::npos)
        << issue->message;
    EXPECT_FALSE(hasErrors(issues)) << describe(issues);
}

} // namespace
} // namespace parallax
