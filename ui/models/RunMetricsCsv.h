#pragma once

#include "core/telemetry/Events.h"

#include <string>
#include <vector>

namespace parallax {

// A run's step metrics as CSV with the columns of `parallax-cli metrics --csv`:
// step,loss,lr,grad_norm,tokens_per_s,samples_per_s,step_ms,step_ms_min,step_ms_max,slowest_rank,
// mfu,tokens,peak_mem,t. Doubles in their shortest exact form, so nothing is lost.
std::string runMetricsCsvHeader();
std::string runMetricsCsv(const std::vector<StepEvent>& rows);

} // namespace parallax
