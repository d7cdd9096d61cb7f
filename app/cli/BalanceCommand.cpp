// parallax-cli balance: pipeline stages split by each unit's measured time instead of its FLOPs.
#include "app/cli/CliError.h"
#include "app/cli/Commands.h"
#include "app/cli/ProbeRuns.h"
#include "app/cli/TextTable.h"
#include "core/launch/SpecRejected.h"
#include "core/spec/MachineInfo.h"
#include "core/spec/ScheduleInfo.h"
#include "core/spec/SpecIO.h"
#include "core/spec/SpecValidator.h"
#include "core/spec/StageBalance.h"

#include <cstdio>
#include <iostream>
#include <stdexcept>

namespace parallax {

namespace {

std::string ms(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f ms", v);
    return buf;
}

std::string layersText(const std::vector<int64_t>& layers) {
    std::string out = "[";
    for (size_t i = 0; i < layers.size(); ++i) out += (i ? ", " : "") + std::to_string(layers[i]);
    return out + "]";
}

} // namespace

MeasuredBalance measureBalance(const std::string& storePath, const RunSpec& spec, int64_t steps,
                               double probeTimeoutSeconds) {
    // The same checks the balance makes after the probe, before a probe is spent on a layout
    // without a split to choose.
    try {
        RunSpec check = spec;
        check.parallel.stage_layers.clear();
        if (check.parallel.pp < 2 || (scheduleInfo(check.parallel.schedule) && scheduleInfo(check.parallel.schedule)->chunked &&
                                        check.parallel.virtual_stages > 1))
            balanceStages(check, {});
    } catch (const std::invalid_argument& e) {
        throw CliError(std::string("balance: ") + e.what(), ExitCode::Usage);
    }
    std::cerr << "balance " << spec.name << ": timing every unit on " << spec.processCount() << " rank(s) ("
              << spec.launch.device.name() << "), " << steps << " steps..." << std::endl;
    ProbeRuns probes(storePath, "balance", probeTimeoutSeconds);
    const ProbeRuns::Result r = probes.run(balanceProbeSpec(spec, steps));
    if (!r.succeeded())
        throw CliError("balance: the probe run failed: " + r.failure(probeTimeoutSeconds), ExitCode::RunFailed);
    MeasuredBalance out;
    out.unit_times = r.unit_times;
    std::vector<MeasuredUnit> times;
    for (const UnitTimeEvent& e : r.unit_times) times.push_back({e.unit, e.forward_ms, e.backward_ms});
    try {
        // The spec's own split (its stage_layers, or by FLOPs) is what the new one is measured against.
        out.balance = balanceStages(spec, times);
    } catch (const std::invalid_argument& e) {
        throw CliError(std::string("balance: ") + e.what(), ExitCode::RunFailed);
    }
    return out;
}

void printBalance(std::ostream& out, const StageBalance& b) {
    TextTable t;
    t.addColumn("stage", TextTable::Align::Right);
    t.addColumn("blocks now", TextTable::Align::Right);
    t.addColumn("time now", TextTable::Align::Right);
    t.addColumn("blocks balanced", TextTable::Align::Right);
    t.addColumn("time balanced", TextTable::Align::Right);
    for (size_t s = 0; s < b.layers.size(); ++s)
        t.addRow({std::to_string(s), std::to_string(b.before_layers[s]), ms(b.before_ms[s]), std::to_string(b.layers[s]),
                  ms(b.stage_ms[s])});
    out << "forward + backward of one micro-batch per stage, from each unit's measured time:\n";
    t.print(out);
    out << "slowest stage: " << ms(b.slowestBefore()) << " now, " << ms(b.slowest()) << " balanced; "
        << "parallel.stage_layers = " << layersText(b.layers) << std::endl;
}

int balanceCommand(const std::string& storePath, const BalanceCommandOptions& o) {
    RunSpec spec = readSpecFile(o.spec);
    const std::vector<SpecIssue> issues = validateSpec(spec, thisMachine());
    if (hasErrors(issues)) throw SpecRejected(issues);
    if (o.steps < 2) throw CliError("--steps must be at least 2: the first step warms up", ExitCode::Usage);
    const StageBalance b = measureBalance(storePath, spec, o.steps, o.probe_timeout_s).balance;
    if (o.csv) {
        std::cout << "stage,blocks_before,ms_before,blocks,ms\n";
        for (size_t s = 0; s < b.layers.size(); ++s)
            std::cout << s << "," << b.before_layers[s] << "," << b.before_ms[s] << "," << b.layers[s] << ","
                      << b.stage_ms[s] << "\n";
        std::cout.flush();
    } else {
        printBalance(std::cout, b);
    }
    if (!o.write) return ExitCode::Ok;
    spec.parallel.stage_layers = b.layers;
    spec.parallel.stage_split = StageSplit::Profile;
    writeSpecFile(spec, o.spec);
    std::cerr << "wrote parallel.stage_layers = " << layersText(b.layers) << " and parallel.stage_split = \"profile\" to "
              << o.spec << std::endl;
    return ExitCode::Ok;
}

} // namespace parallax
