#include "core/spec/DiskEstimate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace parallax {

namespace {

// Bytes per row, measured on this project's store and output (SQLite 3.40, page size 4096):
//  - store: device_samples 63 B (bench_store --only devices --keep: 12,689,408 B of table pages
//    for 200,000 rows, by dbstat); rank_steps 43 B and comms 99 B (200,000 rows of 1,024 ranks
//    inserted into that database's schema with varying times and numbers: 8,507,392 and
//    19,828,736 B by dbstat); a step's metrics 112 B (bench_store --only metrics: 22,433,792 B of
//    metric_chunks for 200,000 steps); a span 30 B (SpanChunk: 26 B per span plus its chunk's
//    key, one chunk per rank and step).
//  - output.log.gz (deflate level 1, as RawOutputWriter): the lines as the ranks print them,
//    mpirun's "[1,R]<stdout>:" tag included, 20 samples of 1,024 ranks interleaved: a GPU device
//    sample 51 B, a rank_step 28 B; from the output of real runs: a comm heartbeat 39 B, a span
//    20 B, a step event 108 B.
constexpr double kStoreDevice = 63, kStoreRankStep = 43, kStoreComm = 99, kStoreStep = 112, kStoreSpan = 30;
constexpr double kOutDevice = 51, kOutRankStep = 28, kOutComm = 39, kOutStep = 108, kOutSpan = 20;
constexpr double kCommEverySeconds = 2;  // a rank's flight recorder heartbeat (CommHeartbeat)
// What thinning keeps of rows older than the raw window (core/store/TelemetryThinning.h): a row per
// rank for each 30 s of device samples and for each 20 steps of step times.
constexpr double kThinnedDeviceSeconds = 30, kThinnedSteps = 20;
constexpr double kWarnBytesPerHour = 1e9;

std::string fixed(double v, int digits) {
    char text[64];
    std::snprintf(text, sizeof text, "%.*f", digits, v);
    return text;
}

std::string count(double v) {
    if (v >= 1e6) return fixed(v / 1e6, 1) + " M ";
    if (v >= 1e3) return fixed(v / 1e3, 0) + " k ";
    return fixed(v, 0) + " ";
}

struct Part {
    const char* what;
    double rows;
    double storeBytes;
    double outputBytes;
    double thinnedRows = -1; // rows an hour once thinned; -1: kept as sent
    double rowBytes = 0;
    double storeGrowth() const { return thinnedRows >= 0 ? thinnedRows * rowBytes : storeBytes; }
};

} // namespace

std::string diskSizeText(double bytes) {
    if (bytes >= 1e12) return fixed(bytes / 1e12, 1) + " TB";
    if (bytes >= 1e9) return fixed(bytes / 1e9, 1) + " GB";
    if (bytes >= 1e6) return fixed(bytes / 1e6, 0) + " MB";
    if (bytes >= 1e3) return fixed(bytes / 1e3, 0) + " kB";
    return fixed(bytes, 0) + " B";
}

DiskEstimate estimateDiskUse(const RunSpec& spec, double stepSeconds) {
    DiskEstimate e;
    e.step_s = stepSeconds > 0 ? stepSeconds : 1.0;
    e.ranks = std::max<int64_t>(1, spec.processCount());
    const TelemetrySpec& t = spec.telemetry;
    const double ranks = static_cast<double>(e.ranks);
    const double steps = 3600.0 / e.step_s;
    const double stepEvery = static_cast<double>(std::max<int64_t>(1, t.step_every));
    const double samples = 3600.0 * 1000.0 / static_cast<double>(std::max<int64_t>(1, t.device_sample_ms));
    // Each rank records a forward and a backward span per micro-batch and model chunk of a recorded step.
    const double microBatches = static_cast<double>(std::max<int64_t>(1, spec.accumulation()));
    const double chunks = static_cast<double>(std::max<int64_t>(1, spec.parallel.virtual_stages));
    const double spanSteps = t.span_every > 0 ? steps / static_cast<double>(t.span_every) : 0;
    const double spans = ranks * spanSteps * 2 * microBatches * chunks;
    const double rankSteps = t.flight_recorder ? ranks * steps / stepEvery : 0;
    const double comms = t.flight_recorder ? ranks * 3600.0 / kCommEverySeconds : 0;
    const double device = ranks * samples;
    const double stepRows = steps / stepEvery;
    const double thinnedDevice = std::min(device, ranks * 3600.0 / kThinnedDeviceSeconds);
    const double thinnedRankSteps = std::min(rankSteps, t.flight_recorder ? ranks * steps / kThinnedSteps : 0);
    const Part parts[] = {
        {"device samples", device, device * kStoreDevice, device * kOutDevice, thinnedDevice, kStoreDevice},
        {"rank steps", rankSteps, rankSteps * kStoreRankStep, rankSteps * kOutRankStep, thinnedRankSteps,
         kStoreRankStep},
        {"flight recorder heartbeats", comms, comms * kStoreComm, comms * kOutComm},
        {"pipeline spans", spans, spans * kStoreSpan, spans * kOutSpan},
        {"steps", stepRows, stepRows * kStoreStep, stepRows * kOutStep},
    };
    const double rawHours = static_cast<double>(std::max<int64_t>(0, spec.retention.raw_telemetry_minutes)) / 60.0;
    for (const Part& p : parts) {
        e.rows_per_hour += p.rows;
        e.store_bytes_per_hour += p.storeGrowth();
        e.store_raw_window_bytes += (p.storeBytes - p.storeGrowth()) * rawHours;
        e.output_bytes_per_hour += p.outputBytes;
        if (p.rows <= 0) continue;
        std::string line = std::string(p.what) + ": " + count(p.rows) + "rows/h, " + diskSizeText(p.storeBytes) +
                           "/h in the store";
        if (p.thinnedRows >= 0 && p.storeGrowth() < p.storeBytes)
            line += " (" + diskSizeText(p.storeGrowth()) + "/h once older than retention.raw_telemetry_minutes)";
        e.lines.push_back(line + ", " + diskSizeText(p.outputBytes) + "/h of output");
    }
    if (e.bytesPerHour() > kWarnBytesPerHour)
        e.warnings.push_back("the run writes about " + diskSizeText(e.bytesPerHour()) + " per hour (above 1 GB/h): "
                             "raise telemetry.device_sample_ms or telemetry.span_every to write less" +
                             std::string(spec.retention.disk_budget_gb > 0
                                             ? ""
                                             : ", and set retention.disk_budget_gb to be warned as the run goes"));
    // A day of the run: the store's rows, and the output up to what retention.output_keep_mb keeps.
    const double keep = static_cast<double>(spec.retention.output_keep_mb) * 1048576.0;
    const double dayOutput = e.output_bytes_per_hour * 24;
    // The raw window's rows beyond their thinned size: a day's worth when the window is longer.
    const double rawInADay = rawHours > 24 ? e.store_raw_window_bytes * 24 / rawHours : e.store_raw_window_bytes;
    e.bytes_per_day = e.store_bytes_per_hour * 24 + rawInADay + (keep > 0 ? std::min(dayOutput, keep) : dayOutput);
    const double budget = spec.retention.disk_budget_gb * 1e9;
    if (budget > 0 && e.bytes_per_day > budget)
        e.warnings.push_back("retention.disk_budget_gb (" + diskSizeText(budget) + ") is passed within a day: a day "
                             "of this run writes about " + diskSizeText(e.bytes_per_day) + "; raise the budget or "
                             "write less telemetry (telemetry.device_sample_ms, span_every)");
    return e;
}

} // namespace parallax
