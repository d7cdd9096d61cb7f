// retention.output_keep_mb (OutputRetention) and retention.disk_budget_gb (DiskBudget).
#include "core/launch/DiskBudget.h"
#include "core/launch/OutputRetention.h"
#include "core/launch/PrivateFile.h"
#include "core/launch/RawOutput.h"
#include "tests/core/launch/RecordedNotices.h"

#include "tests/support/Process.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

namespace parallax {
namespace {

namespace fs = std::filesystem;

using Scratch = parallax::testing::TempDir;
using parallax::testing::RecordedNotices;

// Lines that compress about 3:1, so that segments fill quickly.
std::string noisyLine(int64_t i) {
    std::string line = "[1," + std::to_string(i % 16) + "]<stdout>:line " + std::to_string(i) + " ";
    uint64_t x = static_cast<uint64_t>(i) * 6364136223846793005ull + 1442695040888963407ull;
    for (int k = 0; k < 24; ++k) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        line += static_cast<char>('a' + (x >> 59));
    }
    return line + "\n";
}

struct Output {
    Scratch dir;
    std::FILE* first = createPrivateFile(rawOutputSegmentPath(dir.path(), 0));
    RawOutputWriter writer{first};
    std::string written;
    int64_t lines = 0;

    Output() { writer.setSegments(dir.path(), 4096); }
    ~Output() { std::fclose(first); }

    // Writes and flushes until `segments` segments exist (the last one current).
    void fillTo(size_t segments) {
        while (writer.segments().size() < segments) {
            for (int k = 0; k < 20; ++k) {
                const std::string line = noisyLine(lines++);
                ASSERT_TRUE(writer.write(line.data(), line.size()));
                written += line;
            }
            ASSERT_TRUE(writer.flush());
        }
    }
};

TEST(OutputRetention, RemovesTheOldestSegmentsOnlyOnceTheirLinesAreInTheStore) {
    Output out;
    out.fillTo(5);
    RecordedNotices notices;
    std::optional<int64_t> stored = 0;
    OutputRetention retention(out.writer, 10000, notices, [&] { return stored; });
    const std::vector<RawOutputWriter::Segment> before = out.writer.segments();
    ASSERT_GT(retention.keptBytes(), 10000);

    // Nothing stored yet (the store refused the lines, or they wait to be imported): all stay.
    EXPECT_EQ(retention.prune(), 0);
    EXPECT_EQ(rawOutputSegments(out.dir.path()).size(), 5u);
    // The store cannot say now: all stay.
    stored = std::nullopt;
    EXPECT_EQ(retention.prune(), 0);
    // Stored up to within the second segment: only the first goes.
    stored = before[1].from + 10;
    EXPECT_EQ(retention.prune(), 1);
    EXPECT_FALSE(fs::exists(before[0].path));
    EXPECT_TRUE(fs::exists(before[1].path));
    ASSERT_EQ(notices.said.size(), 1u);
    EXPECT_EQ(notices.said[0].find("info: output: removed " + before[0].path + " ("), 0u) << notices.said[0];
    EXPECT_NE(notices.said[0].find("bytes 0 to " + std::to_string(before[0].to) + " of the output, every line in the store"),
              std::string::npos)
        << notices.said[0];
    // Everything stored: the oldest go until the rest fit in 10,000 bytes, the current one never.
    stored = out.writer.bytesIn();
    const int removed = retention.prune();
    EXPECT_GE(removed, 1);
    EXPECT_EQ(notices.said.size(), 1u + static_cast<size_t>(removed));
    const std::vector<RawOutputSegmentFile> left = rawOutputSegments(out.dir.path());
    ASSERT_FALSE(left.empty());
    EXPECT_EQ(left.back().path, before.back().path);
    EXPECT_LE(retention.keptBytes(), 10000);
    int64_t onDisk = 0;
    for (const RawOutputSegmentFile& f : left) onDisk += static_cast<int64_t>(fs::file_size(f.path));
    EXPECT_EQ(onDisk, retention.keptBytes());
    // What is left reads as the stream's tail.
    RawOutputReader in(rawOutputFile(out.dir.path()));
    const int64_t start = in.position();
    EXPECT_EQ(start, out.writer.segments().front().from);
    std::string text;
    char buf[4096];
    for (size_t got; (got = in.read(buf, sizeof buf)) > 0;) text.append(buf, got);
    EXPECT_EQ(text, out.written.substr(static_cast<size_t>(start)));
}

TEST(OutputRetention, TheCurrentSegmentStaysHoweverLarge) {
    Output out;
    out.fillTo(2);
    RecordedNotices notices;
    OutputRetention retention(out.writer, 1, notices, [&] { return std::optional<int64_t>(out.writer.bytesIn()); });
    EXPECT_EQ(retention.prune(), 1);
    ASSERT_EQ(rawOutputSegments(out.dir.path()).size(), 1u);
    EXPECT_EQ(retention.prune(), 0);
    EXPECT_EQ(rawOutputSegments(out.dir.path()).size(), 1u);
    // Keep 0: every segment is kept.
    out.fillTo(4);
    OutputRetention all(out.writer, 0, notices, [&] { return std::optional<int64_t>(out.writer.bytesIn()); });
    EXPECT_EQ(all.prune(), 0);
    EXPECT_EQ(rawOutputSegments(out.dir.path()).size(), out.writer.segments().size());
}

void writeBytes(const std::string& path, size_t bytes) {
    std::ofstream(path, std::ios::binary) << std::string(bytes, 'x');
}

TEST(DiskBudget, PastTheBudgetOneWarningAlertNamesTheSizes) {
    Scratch dir;
    const std::string runDir = dir.path() + "/run";
    fs::create_directories(runDir + "/checkpoints/step_10");
    const std::string storePath = dir.path() + "/parallax.db";
    writeBytes(storePath, 300000);
    RecordedNotices notices;
    std::vector<RunAlert> raised;
    // 1 MB: the store's 300 kB before the run do not count.
    DiskBudget budget(0.001, runDir, storePath, notices, [&](const RunAlert& a) { raised.push_back(a); },
                      std::chrono::seconds(0));
    writeBytes(runDir + "/output.log.gz", 400000);
    writeBytes(runDir + "/checkpoints/step_10/rank0.pt", 300000);
    EXPECT_EQ(DiskBudget::folderBytes(runDir), 700000);
    const auto now = DiskBudget::Clock::now();
    EXPECT_FALSE(budget.check(now));
    EXPECT_TRUE(raised.empty());
    // The store grows by 200 kB and the WAL by 150 kB: 1,050,000 bytes, past 1 MB.
    writeBytes(storePath, 500000);
    writeBytes(storePath + "-wal", 150000);
    EXPECT_TRUE(budget.check(now + std::chrono::seconds(1)));
    ASSERT_EQ(raised.size(), 1u);
    EXPECT_EQ(raised[0].kind, AlertKind::DiskBudget);
    EXPECT_TRUE(raised[0].active);
    EXPECT_EQ(raised[0].message.find("the run's disk use, 1.1 MB, is past retention.disk_budget_gb (1.0 MB): its folder " +
                                     runDir + " holds 0.7 MB"),
              0u)
        << raised[0].message;
    EXPECT_NE(raised[0].message.find("or raise the budget"), std::string::npos) << raised[0].message;
    ASSERT_EQ(notices.said.size(), 1u);
    EXPECT_EQ(notices.said[0], "warn: disk budget: " + raised[0].message);
    // Once: more growth raises nothing more.
    writeBytes(runDir + "/output.1.log.gz", 2000000);
    EXPECT_FALSE(budget.check(now + std::chrono::seconds(2)));
    EXPECT_EQ(raised.size(), 1u);
    EXPECT_EQ(notices.said.size(), 1u);
    EXPECT_EQ(alertKindName(AlertKind::DiskBudget), std::string("disk_budget"));
    EXPECT_TRUE(alertKindNamed("disk_budget") == AlertKind::DiskBudget);
}

TEST(DiskBudget, NoBudgetMeasuresNothing) {
    Scratch dir;
    writeBytes(dir.path() + "/big", 5000000);
    RecordedNotices notices;
    int raised = 0;
    DiskBudget none(0, dir.path(), "", notices, [&](const RunAlert&) { ++raised; }, std::chrono::seconds(0));
    EXPECT_FALSE(none.check(DiskBudget::Clock::now()));
    EXPECT_EQ(raised, 0);
    EXPECT_TRUE(notices.said.empty());
}

} // namespace
} // namespace parallax
