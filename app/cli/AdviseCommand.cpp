// parallax-cli advise: every layout of a spec's model on N devices, ranked by a step-time model
// calibrated on those devices, and the best few tried side by side.
#include "app/cli/CliError.h"
#include "app/cli/Commands.h"
#include "app/cli/Format.h"
#include "app/cli/ProbeRuns.h"
#include "app/cli/TextTable.h"
#include "core/spec/Estimates.h"
#include "core/spec/LayoutAdvisor.h"
#include "core/spec/MachineInfo.h"
#include "core/spec/SpecIO.h"
#include "core/spec/SpecLimits.h"
#include "core/telemetry/Statistics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>

namespace parallax {

namespace {

struct Measured {
    double ms = 0;            // median step time after the first step
    double tokens_per_s = 0;  // median over the same steps
    std::vector<UnitTimeEvent> unit_times;             // when the probe timed its units
    std::vector<CollectiveTimeEvent> collective_times; // and its all-reduces
};

// The probe's steady steps: the first warms up (allocations, the first collectives).
Measured measure(const ProbeRuns::Result& r) {
    std::vector<double> ms, tokens;
    for (const StepEvent& e : r.steps) {
        if (e.step == 0) continue;
        ms.push_back(e.step_ms);
        tokens.push_back(e.tokens_per_s);
    }
    return {medianOf(ms).value_or(0), medianOf(tokens).value_or(0), r.unit_times, r.collective_times};
}

std::string probeName(const RunSpec& spec, const std::string& label, const char* what) {
    std::string name = spec.name + "-advise-" + label + what;
    std::replace(name.begin(), name.end(), ' ', '-');
    return name;
}

std::string msText(double ms) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f ms", ms);
    return text;
}

// The devices to lay the model out on, after the options are checked.
int64_t checkedDevices(const RunSpec& base, const AdviseCommandOptions& o) {
    const int64_t devices = o.devices.value_or(base.processCount());
    if (devices < 1 || devices > kMaxProcesses)
        throw CliError((o.devices ? "--devices " + std::to_string(devices)
                                  : "the spec's processes (" + std::to_string(devices) + ")") +
                           " must be from 1 to " + parallax::limitText(kMaxProcesses) +
                           ": the devices (ranks) to lay the model out on",
                       ExitCode::Usage);
    if (o.try_count < 1) throw CliError("--try must be at least 1", ExitCode::Usage);
    if (o.steps < 3) throw CliError("--steps must be at least 3: the first step warms up", ExitCode::Usage);
    checkProbeTimeout(o.probe_timeout_s);
    return devices;
}

struct MemoryLimit {
    double bytes = 0; // 0: not checked
    std::string text = "memory not checked (give --memory-limit)";
};

MemoryLimit memoryLimit(const RunSpec& base, const MachineInfo& machine, int64_t devices,
                        const AdviseCommandOptions& o) {
    MemoryLimit limit;
    if (!o.memory_limit.empty()) {
        limit.bytes = parseByteSize(o.memory_limit, "--memory-limit");
        limit.text = formatBytes(limit.bytes) + " per device (--memory-limit)";
    } else if (base.launch.device == Device::Cpu && base.launch.target == Target::Local && machine.ram_bytes > 0) {
        limit.bytes = static_cast<double>(machine.ram_bytes) / static_cast<double>(devices);
        limit.text = formatBytes(limit.bytes) + " per rank (this machine's memory among " + std::to_string(devices) +
                     " ranks)";
    }
    return limit;
}

// The spec as each probe runs it: `steps` steps, no warm-up, checkpoints or spans.
RunSpec probedSpec(const RunSpec& base, int64_t steps) {
    RunSpec spec = base;
    spec.train.steps = steps;
    spec.train.warmup = 0;
    spec.train.checkpoint_every = 0;
    spec.telemetry.span_every = 0;
    spec.launch.on_host_failure = OnHostFailure::Fail;
    return spec;
}

// The indexes of the layouts that can run; CliError naming why each cannot when none can.
std::vector<size_t> usableLayouts(const std::vector<LayoutOption>& options, int64_t devices) {
    std::vector<size_t> usable;
    for (size_t i = 0; i < options.size(); ++i)
        if (options[i].excluded.empty()) usable.push_back(i);
    if (usable.empty()) {
        std::string why;
        for (const LayoutOption& l : options) why += "\n  " + l.label + ": " + l.excluded;
        throw CliError("advise: no layout of " + std::to_string(devices) + " devices can run this spec:" + why,
                       ExitCode::Usage);
    }
    return usable;
}

// One probe run, its measurement or why it failed; progress on stderr.
struct Prober {
    ProbeRuns& probes;
    double timeoutSeconds;

    std::pair<Measured, std::string> operator()(const RunSpec& s, const std::string& label) {
        std::cerr << "probing " << label << "..." << std::endl;
        const ProbeRuns::Result r = probes.run(s);
        if (!r.succeeded()) return std::make_pair(Measured{}, r.failure(timeoutSeconds));
        const Measured m = measure(r);
        std::cerr << "  " << label << ": " << msText(m.ms) << " a step, " << formatRate(m.tokens_per_s) << " tokens/s"
                  << std::endl;
        return std::make_pair(m, std::string());
    }
};

struct Calibration {
    size_t index = 0;         // of the layout probed
    RunSpec small;            // its probe, which also timed units and all-reduces
    Measured measured;        // of that probe
    StepTimeModel model;
    size_t collectives = 0;   // all-reduce sizes timed
};

// Calibration on the first layout that can run (the most data-parallel one): the same layout at
// twice the global batch doubles the FLOPs and leaves the gradients' communication as it is.
// The small one also times each unit and all-reduces of a few sizes after its steps.
Calibration calibrate(Prober& probe, const RunSpec& spec, const std::vector<LayoutOption>& options, size_t index,
                      const MachineInfo& machine) {
    const LayoutOption& calibration = options[index];
    RunSpec small = calibration.spec;
    small.name = probeName(spec, calibration.label, "");
    small.telemetry.unit_times = true;
    small.telemetry.collective_times = true;
    RunSpec large = withGlobalBatchTimes(calibration.spec, 2);
    large.name = probeName(spec, calibration.label, "-calibration");
    const auto [smallRun, smallError] = probe(small, calibration.label);
    if (!smallError.empty()) throw CliError("advise: the calibration probe " + calibration.label + " failed: " + smallError);
    const auto [largeRun, largeError] = probe(large, calibration.label + " at twice the global batch");
    if (!largeError.empty()) throw CliError("advise: the calibration probe " + calibration.label + " failed: " + largeError);
    CalibrationProbe probed;
    for (const UnitTimeEvent& e : smallRun.unit_times) probed.units.push_back({e.unit, e.forward_ms, e.backward_ms});
    for (const CollectiveTimeEvent& e : smallRun.collective_times)
        probed.collectives.push_back({e.ranks, static_cast<double>(e.bytes), e.ms});
    probed.cpu_slots = sharedCpuSlots(small, machine);
    StepTimeModel model;
    try {
        model = calibrateStepTime(small, smallRun.ms, large, largeRun.ms, probed);
    } catch (const std::invalid_argument& e) {
        throw CliError(std::string("advise: the calibration probe ") + calibration.label + " measured what cannot be used: " +
                       e.what());
    }
    return {index, small, smallRun, model, probed.collectives.size()};
}

// Best predicted first; where the model cannot tell two apart (ZeRO 1 and 2 move as much as 0),
// the one that needs less memory.
void rankByPrediction(std::vector<LayoutOption>& options, std::vector<size_t>& usable, const StepTimeModel& model) {
    for (size_t i : usable) options[i].predicted_ms = model.predictMs(options[i].spec);
    std::stable_sort(usable.begin(), usable.end(), [&](size_t a, size_t b) {
        const double pa = options[a].predicted_ms, pb = options[b].predicted_ms;
        if (std::fabs(pa - pb) > 1e-3 * std::max(pa, pb)) return pa < pb;
        return options[a].memory_bytes < options[b].memory_bytes;
    });
}

// One layout of each shape (dp x tp x pp), its best ZeRO stage: trying three ZeRO stages of one
// shape would say little about the others.
std::vector<size_t> layoutsToTry(const std::vector<LayoutOption>& options, const std::vector<size_t>& usable,
                                 int64_t tryCount) {
    std::vector<size_t> tried;
    for (size_t i : usable) {
        if (tried.size() == static_cast<size_t>(tryCount)) break;
        const ParallelSpec& p = options[i].spec.parallel;
        const bool seen = std::any_of(tried.begin(), tried.end(), [&](size_t j) {
            const ParallelSpec& q = options[j].spec.parallel;
            return q.dp == p.dp && q.tp == p.tp && q.pp == p.pp;
        });
        if (!seen) tried.push_back(i);
    }
    return tried;
}

struct Tried {
    std::map<size_t, Measured> measured;  // by layout index
    std::map<size_t, std::string> failed; // why
    std::vector<size_t> ranked;           // by measured tokens/s, best first
    std::map<size_t, size_t> rankOf;      // 1 for the best
};

// The best few by the model, tried side by side on the devices. The calibration's layout is
// measured already, whether the model puts it among them or not.
Tried tryLayouts(Prober& probe, const RunSpec& spec, const std::vector<LayoutOption>& options,
                 const std::vector<size_t>& tried, const Calibration& calibration) {
    Tried t;
    t.measured[calibration.index] = calibration.measured;
    for (const size_t i : tried) {
        if (i == calibration.index) continue;
        RunSpec s = options[i].spec;
        s.name = probeName(spec, options[i].label, "");
        const auto [m, error] = probe(s, options[i].label);
        if (error.empty()) t.measured[i] = m;
        else t.failed[i] = error;
    }
    for (const auto& [i, m] : t.measured) t.ranked.push_back(i);
    std::sort(t.ranked.begin(), t.ranked.end(),
              [&](size_t a, size_t b) { return t.measured.at(a).tokens_per_s > t.measured.at(b).tokens_per_s; });
    for (size_t r = 0; r < t.ranked.size(); ++r) t.rankOf[t.ranked[r]] = r + 1;
    return t;
}

void printCsv(const std::vector<LayoutOption>& options, const Tried& tried) {
    std::cout << "layout,excluded,memory_bytes,predicted_ms,measured_tokens_per_s,measured_ms,measured_rank\n";
    for (size_t i = 0; i < options.size(); ++i) {
        const LayoutOption& l = options[i];
        std::string excluded = l.excluded;
        std::replace(excluded.begin(), excluded.end(), ',', ';');
        std::replace(excluded.begin(), excluded.end(), '\n', ' ');
        const auto m = tried.measured.find(i);
        std::cout << l.label << "," << excluded << "," << static_cast<int64_t>(l.memory_bytes) << ","
                  << (l.excluded.empty() ? formatExact(l.predicted_ms) : "") << ","
                  << (m != tried.measured.end() ? formatExact(m->second.tokens_per_s) : "") << ","
                  << (m != tried.measured.end() ? formatExact(m->second.ms) : "") << ","
                  << (tried.rankOf.count(i) ? std::to_string(tried.rankOf.at(i)) : "") << "\n";
    }
    std::cout.flush();
}

// The rates the model was calibrated to, as one line.
void printCalibration(const Calibration& calibration, const std::string& label, int64_t devices) {
    const StepTimeModel& model = calibration.model;
    char rates[160];
    std::snprintf(rates, sizeof rates, "calibrated on %s: %s FLOP/s per rank, %s/s of communication",
                  label.c_str(), formatCount(model.flops_per_s).c_str(),
                  std::isfinite(model.bytes_per_s) ? formatBytes(model.bytes_per_s).c_str() : "no measurable time");
    std::cout << rates;
    if (calibration.collectives > 0) {
        std::snprintf(rates, sizeof rates, " (%zu all-reduce sizes timed: %.1f us a ring step)",
                      calibration.collectives, model.hop_latency_s * 1e6);
        std::cout << rates;
    }
    if (!model.unit_ms.empty())
        std::cout << "; compute from " << model.unit_ms.size() << " units' measured times";
    if (model.cpu_slots > 0 && static_cast<double>(devices) > model.cpu_slots) {
        std::snprintf(rates, sizeof rates, "; %lld ranks share cores that run %.0f at once",
                      static_cast<long long>(devices), model.cpu_slots);
        std::cout << rates;
    }
    std::cout << "\n\n";
}

// Every layout, those that can run first in the order of their prediction.
void printLayouts(const std::vector<LayoutOption>& options, const std::vector<size_t>& usable, const Tried& tried) {
    TextTable t;
    t.addColumn("layout");
    t.addColumn("memory", TextTable::Align::Right);
    t.addColumn("predicted step", TextTable::Align::Right);
    t.addColumn("measured tokens/s", TextTable::Align::Right);
    t.addColumn("measured step", TextTable::Align::Right);
    t.addColumn("rank / why not");
    std::vector<size_t> order = usable;
    for (size_t i = 0; i < options.size(); ++i)
        if (!options[i].excluded.empty()) order.push_back(i);
    for (size_t i : order) {
        const LayoutOption& l = options[i];
        const auto m = tried.measured.find(i);
        std::string note = l.excluded;
        if (tried.rankOf.count(i)) note = "#" + std::to_string(tried.rankOf.at(i)) + " measured";
        else if (tried.failed.count(i)) note = "failed: " + tried.failed.at(i);
        else if (note.empty()) note = "not tried";
        t.addRow({l.label, l.memory_bytes > 0 ? formatBytes(l.memory_bytes) : "-",
                  l.excluded.empty() ? msText(l.predicted_ms) : "-",
                  m != tried.measured.end() ? formatRate(m->second.tokens_per_s) : "-",
                  m != tried.measured.end() ? msText(m->second.ms) : "-", note});
    }
    t.print(std::cout);
}

} // namespace

int adviseCommand(const std::string& storePath, const AdviseCommandOptions& o) {
    const RunSpec base = readSpecFile(o.spec);
    const MachineInfo machine = thisMachine();
    const int64_t devices = checkedDevices(base, o);
    const MemoryLimit limit = memoryLimit(base, machine, devices, o);
    const RunSpec spec = probedSpec(base, o.steps);

    std::vector<LayoutOption> options = layoutOptions(spec, devices, machine, limit.bytes);
    std::vector<size_t> usable = usableLayouts(options, devices);
    if (!o.csv)
        std::cout << "advise " << base.name << " on " << devices << " devices (" << base.launch.device.name() << ", "
                  << base.launch.target.name() << "): " << usable.size() << " of " << options.size()
                  << " layouts can run; " << limit.text << std::endl;

    ProbeRuns probes(storePath, "advise", o.probe_timeout_s);
    Prober probe{probes, o.probe_timeout_s};
    const Calibration calibration = calibrate(probe, spec, options, usable.front(), machine);
    rankByPrediction(options, usable, calibration.model);
    const Tried tried = tryLayouts(probe, spec, options, layoutsToTry(options, usable, o.try_count), calibration);

    const double tokensPerStep = static_cast<double>(estimate(calibration.small).tokens_per_step);
    if (o.csv) {
        printCsv(options, tried);
        return tried.ranked.empty() ? ExitCode::RunFailed : ExitCode::Ok;
    }
    printCalibration(calibration, options[calibration.index].label, devices);
    printLayouts(options, usable, tried);
    if (!tried.ranked.empty()) {
        const size_t best = tried.ranked.front();
        std::cout << "\nbest measured: " << options[best].label << ", "
                  << formatRate(tried.measured.at(best).tokens_per_s) << " tokens/s (predicted "
                  << formatRate(tokensPerStep / (options[best].predicted_ms / 1000.0)) << "); set it in [parallel] of "
                  << o.spec << std::endl;
    }
    return tried.ranked.empty() ? ExitCode::RunFailed : ExitCode::Ok;
}

} // namespace parallax
