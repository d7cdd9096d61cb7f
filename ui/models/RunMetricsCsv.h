#pragma once

#include "core/telemetry/Events.h"

#include <string>
#include <vector>

namespace parallax {

// A run's step metrics as CSV with the columns of `parallax-cli metrics --csv`:
// step,loss,lr,grad_norm,tokens_per_s,samples_per_s,step_ms,step_ms_min,step_ms_max,slowest_rank,
// mfu,tokens,peak_mem,t. Doubles in their shortest exact form, so nothing is lost.
std::string runMetricsCsvHeader();
// A number as every CSV of the console and of parallax-cli writes it: the shortest text that reads
// back to the same double ("0.1", "3e-04", "1700000000.25"), "nan", "inf" or "-inf".
std::string csvNumber(double v);
std::string runMetricsCsv(const std::vector<StepEvent>& rows);

} // namespace parallax
