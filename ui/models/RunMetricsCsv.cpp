#include "ui/models/RunMetricsCsv.h"

#include <charconv>
#include <system_error>

namespace parallax {

namespace {

// Plain decimals (timestamps and byte counts read better as 1700000000.25 than 1.7e+09), the
// shortest that reads back to the same double.
void appendDouble(std::string& out, double v) {
    char buf[512];
    auto result = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed);
    if (result.ec != std::errc()) result = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, result.ptr);
}

void appendInt(std::string& out, int64_t v) {
    out += std::to_string(v);
}

} // namespace

std::string runMetricsCsvHeader() {
    return "step,loss,lr,grad_norm,tokens_per_s,samples_per_s,step_ms,step_ms_min,step_ms_max,slowest_rank,mfu,"
           "tokens,peak_mem,t";
}

std::string runMetricsCsv(const std::vector<StepEvent>& rows) {
    std::string out = runMetricsCsvHeader() + "\n";
    out.reserve(out.size() + rows.size() * 120);
    for (const StepEvent& e : rows) {
        appendInt(out, e.step);
        for (double v : {e.loss, e.lr, e.grad_norm, e.tokens_per_s, e.samples_per_s, e.step_ms, e.step_ms_min,
                         e.step_ms_max}) {
            out += ',';
            appendDouble(out, v);
        }
        out += ',';
        appendInt(out, e.slowest_rank);
        out += ',';
        appendDouble(out, e.mfu);
        out += ',';
        appendInt(out, e.tokens);
        out += ',';
        appendDouble(out, e.peak_mem);
        out += ',';
        appendDouble(out, e.t);
        out += '\n';
    }
    return out;
}

} // namespace parallax
