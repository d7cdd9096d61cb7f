#include "app/cli/Commands.h"
#include "app/cli/Format.h"
#include "app/cli/TextTable.h"
#include "core/spec/Estimates.h"

#include <iostream>

namespace parallax {

int metricsCommand(const std::string& storePath, const std::string& run, bool csv) {
    RunStore store(storePath);
    const RunRecord r = requireRun(store, run);
    const std::vector<StepEvent> rows = store.metrics(r.id);
    if (csv) {
        std::string out = "step,loss,lr,grad_norm,tokens_per_s,samples_per_s,step_ms,step_ms_min,step_ms_max,"
                          "slowest_rank,mfu,tokens,peak_mem,t\n";
        for (const StepEvent& s : rows) {
            out += std::to_string(s.step) + "," + formatExact(s.loss) + "," + formatExact(s.lr) + "," +
                   formatExact(s.grad_norm) + "," + formatExact(s.tokens_per_s) + "," + formatExact(s.samples_per_s) +
                   "," + formatExact(s.step_ms) + "," + formatExact(s.step_ms_min) + "," + formatExact(s.step_ms_max) +
                   "," + std::to_string(s.slowest_rank) + "," + formatExact(s.mfu) + "," + std::to_string(s.tokens) +
                   "," + formatExact(s.peak_mem) + "," + formatExact(s.t) + "\n";
        }
        std::cout << out;
        return 0;
    }
    if (rows.empty()) {
        std::cerr << "run " << r.id << " has no steps yet (" << r.state << ")" << std::endl;
        return 0;
    }
    using A = TextTable::Align;
    TextTable t;
    for (const char* h : {"STEP", "LOSS", "LR", "GRAD NORM", "TOK/S", "SAMPLES/S", "STEP MS", "MIN", "MAX", "SLOWEST",
                          "MFU", "TOKENS", "PEAK MEM"})
        t.addColumn(h, A::Right);
    t.addColumn("TIME");
    char lr[32];
    char ms[3][32];
    char gn[32];
    for (const StepEvent& s : rows) {
        std::snprintf(lr, sizeof lr, "%.3g", s.lr);
        std::snprintf(gn, sizeof gn, "%.3f", s.grad_norm);
        std::snprintf(ms[0], sizeof ms[0], "%.1f", s.step_ms);
        std::snprintf(ms[1], sizeof ms[1], "%.1f", s.step_ms_min);
        std::snprintf(ms[2], sizeof ms[2], "%.1f", s.step_ms_max);
        t.addRow({std::to_string(s.step), formatLoss(s.loss), lr, gn, formatRate(s.tokens_per_s),
                  formatRate(s.samples_per_s), ms[0], ms[1], ms[2], std::to_string(s.slowest_rank),
                  formatPercent(s.mfu), formatCount(static_cast<double>(s.tokens)),
                  s.peak_mem > 0 ? formatBytes(s.peak_mem) : "-", formatClock(s.t)});
    }
    t.print(std::cout);
    return 0;
}

} // namespace parallax
