#include "core/spec/DiskEstimate.h"
#include "core/spec/SpecIO.h"

#include <gtest/gtest.h>

#include <string>

namespace parallax {
namespace {

std::string joined(const std::vector<std::string>& lines) {
    std::string out;
    for (const std::string& l : lines) out += l + "\n";
    return out;
}

// 1,024 ranks at the telemetry defaults (a device sample every 500 ms, spans every 10 steps, the
// flight recorder on), one micro-batch per step, at 1 s steps.
RunSpec thousandRanks() {
    return parseSpec("[train]\nglobal_batch = 1024\nmicro_batch = 1\n[parallel]\ndp = 1024\n");
}

TEST(DiskEstimate, CountsEachKindOfRowFromTheRanksAndTheTelemetry) {
    const DiskEstimate e = estimateDiskUse(thousandRanks(), 1.0);
    EXPECT_EQ(e.ranks, 1024);
    // device 1024 x 7200, rank steps 1024 x 3600, heartbeats 1024 x 1800, spans 1024 x 360 x 2,
    // steps 3600.
    const double rows = 1024.0 * 7200 + 1024.0 * 3600 + 1024.0 * 1800 + 1024.0 * 360 * 2 + 3600;
    EXPECT_DOUBLE_EQ(e.rows_per_hour, rows);
    // Once older than the raw window, device samples are a row per rank and 30 s (120 an hour) and
    // rank steps a row per rank and 20 steps (180 an hour); the raw window holds the rest.
    EXPECT_DOUBLE_EQ(e.store_bytes_per_hour,
                     1024.0 * 120 * 63 + 1024.0 * 180 * 43 + 1024.0 * 1800 * 99 + 1024.0 * 720 * 30 + 3600.0 * 112);
    EXPECT_DOUBLE_EQ(e.store_raw_window_bytes, 1024.0 * (7200 - 120) * 63 + 1024.0 * (3600 - 180) * 43);
    EXPECT_DOUBLE_EQ(e.output_bytes_per_hour,
                     1024.0 * 7200 * 51 + 1024.0 * 3600 * 28 + 1024.0 * 1800 * 39 + 1024.0 * 720 * 20 + 3600.0 * 108);
    // About 0.22 GB of rows and 0.57 GB of output an hour: under 1 GB/h.
    EXPECT_EQ(diskSizeText(e.store_bytes_per_hour), "221 MB");
    EXPECT_EQ(diskSizeText(e.store_raw_window_bytes), "607 MB");
    EXPECT_EQ(diskSizeText(e.output_bytes_per_hour), "566 MB");
    EXPECT_TRUE(e.warnings.empty()) << joined(e.warnings);
    EXPECT_NE(joined(e.lines).find("device samples: 7.4 M rows/h, 464 MB/h in the store (8 MB/h once older than "
                                   "retention.raw_telemetry_minutes), 376 MB/h of output"),
              std::string::npos)
        << joined(e.lines);
    // A day: 24 hours of thinned rows, the raw window, and the output up to output_keep_mb (2 GiB).
    EXPECT_DOUBLE_EQ(e.bytes_per_day, e.store_bytes_per_hour * 24 + e.store_raw_window_bytes + 2048.0 * 1048576);
    // Four times the ranks write above 1 GB/h.
    const DiskEstimate wide = estimateDiskUse(parseSpec("[train]\nglobal_batch = 4096\nmicro_batch = 1\n"
                                                        "[parallel]\ndp = 4096\n"),
                                              1.0);
    ASSERT_EQ(wide.warnings.size(), 1u) << joined(wide.warnings);
    EXPECT_NE(wide.warnings[0].find("about 3.1 GB per hour (above 1 GB/h)"), std::string::npos) << wide.warnings[0];
}

TEST(DiskEstimate, FollowsTheTelemetryFieldsAndTheStepTime) {
    RunSpec spec = thousandRanks();
    spec.telemetry.flight_recorder = false;
    spec.telemetry.span_every = 0;
    spec.telemetry.device_sample_ms = 1000;
    const DiskEstimate slow = estimateDiskUse(spec, 10.0);
    EXPECT_DOUBLE_EQ(slow.rows_per_hour, 1024.0 * 3600 + 360);
    EXPECT_TRUE(slow.warnings.empty()) << joined(slow.warnings);
    EXPECT_EQ(joined(slow.lines).find("rank steps"), std::string::npos);
}

TEST(DiskEstimate, ABudgetPassedWithinADayIsAWarning) {
    RunSpec spec = parseSpec("[parallel]\ndp = 8\n[retention]\ndisk_budget_gb = 1\n");
    const DiskEstimate e = estimateDiskUse(spec, 1.0);
    // 8 ranks: about 7 MB an hour: 56 MB of rows and 115 MB of output a day.
    EXPECT_LT(e.bytesPerHour(), 1e9);
    EXPECT_TRUE(e.warnings.empty()) << joined(e.warnings);
    spec.retention.disk_budget_gb = 0.1;
    const DiskEstimate tight = estimateDiskUse(spec, 1.0);
    ASSERT_EQ(tight.warnings.size(), 1u) << joined(tight.warnings);
    EXPECT_NE(tight.warnings[0].find("retention.disk_budget_gb (100 MB) is passed within a day"), std::string::npos)
        << tight.warnings[0];
    // The output counts only up to what output_keep_mb keeps.
    spec.retention.output_keep_mb = 1;
    EXPECT_DOUBLE_EQ(estimateDiskUse(spec, 1.0).bytes_per_day,
                     tight.store_bytes_per_hour * 24 + tight.store_raw_window_bytes + 1048576.0);
}

} // namespace
} // namespace parallax
