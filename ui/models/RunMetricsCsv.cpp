#include "ui/models/RunMetricsCsv.h"

#include <charconv>
#include <cmath>

namespace parallax {

namespace {

// The shortest text that reads back to the same double, as parallax-cli writes it, so that both
// exports of a run are the same file.
void appendDouble(std::string& out, double v) {
    if (std::isnan(v)) {
        out += "nan";
        return;
    }
    if (std::isinf(v)) {
        out += v > 0 ? "inf" : "-inf";
        return;
    }
    char buf[64];
    const auto result = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, result.ptr);
}

void appendInt(std::string& out, int64_t v) {
    out += std::to_string(v);
}

} // namespace

std::string csvNumber(double v) {
    std::string out;
    appendDouble(out, v);
    return out;
}

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
