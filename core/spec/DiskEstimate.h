#pragma once

#include "core/spec/RunSpec.h"

#include <cstdint>
#include <string>
#include <vector>

namespace parallax {

// What a run of a spec writes to disk per hour: the rows its telemetry adds to the store and its
// raw output (output.log.gz), from the number of ranks, telemetry.device_sample_ms, step_every,
// span_every and flight_recorder and [retention], at an assumed step time. Shown by
// `parallax-cli check`.
struct DiskEstimate {
    double step_s = 1.0;           // the step time assumed
    int64_t ranks = 0;
    double rows_per_hour = 0;      // rows the ranks send, of every kind
    // The store's growth once the run is older than retention.raw_telemetry_minutes: device
    // samples and rank steps thinned (core/store/TelemetryThinning.h), the other rows as sent.
    double store_bytes_per_hour = 0;
    double store_raw_window_bytes = 0; // what the raw window holds beyond that, at any time
    double output_bytes_per_hour = 0;  // compressed
    double bytes_per_day = 0;      // the store's rows and the output retention.output_keep_mb keeps
    std::vector<std::string> lines;    // the estimate, a line per part, for a person
    std::vector<std::string> warnings; // above 1 GB/h; retention.disk_budget_gb passed within a day

    double bytesPerHour() const { return store_bytes_per_hour + output_bytes_per_hour; }
};

// The estimate of `spec` at steps of `stepSeconds`.
DiskEstimate estimateDiskUse(const RunSpec& spec, double stepSeconds = 1.0);

// "1.3 GB", "850 MB", "12 kB" (powers of 1000).
std::string diskSizeText(double bytes);

} // namespace parallax
