#include "core/spec/RetentionChecks.h"

#include "core/spec/IssueList.h"

#include <cmath>
#include <string>

namespace parallax {

namespace {

std::string num(int64_t v) { return std::to_string(v); }

std::string numText(double v) {
    std::string text = std::to_string(v);
    while (!text.empty() && text.back() == '0') text.pop_back();
    if (!text.empty() && text.back() == '.') text.pop_back();
    return text;
}

} // namespace

std::vector<SpecIssue> retentionIssues(const RunSpec& spec) {
    IssueList out;
    const RetentionSpec& r = spec.retention;
    if (r.output_segment_mb < 1)
        out.error("retention.output_segment_mb", "retention.output_segment_mb = " + num(r.output_segment_mb) +
                                                     " must be at least 1 (MiB of compressed output per segment of "
                                                     "output.log.gz; e.g. 256)");
    else
        out.checkCount("retention.output_segment_mb", r.output_segment_mb, 1);
    if (r.output_keep_mb < 0)
        out.error("retention.output_keep_mb", "retention.output_keep_mb = " + num(r.output_keep_mb) +
                                                  " must be 0 (keep every segment) or more (MiB of output kept; e.g. 2048)");
    else
        out.checkCount("retention.output_keep_mb", r.output_keep_mb, 0);
    if (r.raw_telemetry_minutes < 1)
        out.error("retention.raw_telemetry_minutes", "retention.raw_telemetry_minutes = " + num(r.raw_telemetry_minutes) +
                                                         " must be at least 1 (minutes device samples and rank steps "
                                                         "are kept at full rate; e.g. 60)");
    else
        out.checkCount("retention.raw_telemetry_minutes", r.raw_telemetry_minutes, 1);
    if (!std::isfinite(r.disk_budget_gb) || r.disk_budget_gb < 0)
        out.error("retention.disk_budget_gb", "retention.disk_budget_gb = " + numText(r.disk_budget_gb) +
                                                  " must be 0 (no budget) or more (GB of the run folder and its share "
                                                  "of the store; e.g. 500)");
    if (hasErrors(out.list)) return std::move(out.list);
    if (r.output_keep_mb > 0 && r.output_keep_mb < r.output_segment_mb)
        out.warn("retention.output_keep_mb",
                 "retention.output_keep_mb = " + num(r.output_keep_mb) + " is below retention.output_segment_mb = " +
                     num(r.output_segment_mb) + ": every segment but the one being written is removed once its rows "
                     "are stored",
                 {"retention.output_segment_mb"});
    const double keptGb = static_cast<double>(r.output_keep_mb) * 1048576.0 / 1e9;
    if (r.disk_budget_gb > 0 && (r.output_keep_mb == 0 || keptGb >= r.disk_budget_gb))
        out.warn("retention.disk_budget_gb",
                 "retention.disk_budget_gb = " + numText(r.disk_budget_gb) + " is " +
                     (r.output_keep_mb == 0 ? std::string("bounded by nothing: retention.output_keep_mb = 0 keeps every "
                                                          "segment of the output")
                                            : "at most the output kept alone (retention.output_keep_mb = " +
                                                  num(r.output_keep_mb) + " MiB)") +
                     "; the budget's alert will come; raise it or lower output_keep_mb",
                 {"retention.output_keep_mb"});
    return std::move(out.list);
}

} // namespace parallax
