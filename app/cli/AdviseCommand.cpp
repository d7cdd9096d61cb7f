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

} // namespace

int adviseCommand(const std::string& storePath, const AdviseCommandOptions& o) {
    const RunSpec base = readSpecFile(o.spec);
    const MachineInfo machine = thisMachine();
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
    double limit = 0;
    std::string limitText = "memory not checked (give --memory-limit)";
    if (!o.memory_limit.empty()) {
        limit = parseByteSize(o.memory_limit, "--memory-limit");
        limitText = formatBytes(limit) + " per device (--memory-limit)";
    } else if (base.launch.device == Device::Cpu && base.launch.target == Target::Local && machine.ram_bytes > 0) {
        limit = static_cast<double>(machine.ram_bytes) / static_cast<double>(devices);
        limitText = formatBytes(limit) + " per rank (this machine's memory among " + std::to_string(devices) + " ranks)";
    }
    RunSpec spec = base;
    spec.train.steps = o.steps;
    spec.train.warmup = 0;
    spec.train.checkpoint_every = 0;
    spec.telemetry.span_every = 0;
    spec.launch.on_host_failure = OnHostFailure::Fail;

    std::vector<LayoutOption> options = layoutOptions(spec, devices, machine, limit);
    std::vector<size_t> usable;
    for (size_t i = 0; i < options.size(); ++i)
        if (options[i].excluded.empty()) usable.push_back(i);
    if (usable.empty()) {
        std::string why;
        for (const LayoutOption& l : options) why += "\n  " + l.label + ": " + l.excluded;
        throw CliError("advise: no layout of " + std::to_string(devices) + " devices can run this spec:" + why,
                       ExitCode::Usage);
    }
    if (!o.csv)
        std::cout << "advise " << base.name << " on " << devices << " devices (" << base.launch.device.name() << ", "
                  << base.launch.target.name() << "): " << usable.size() << " of " << options.size()
                  << " layouts can run; " << limitText << std::endl;

    ProbeRuns probes(storePath, "advise", o.probe_timeout_s);
    const auto probe = [&](const RunSpec& s, const std::string& label) {
        std::cerr << "probing " << label << "..." << std::endl;
        const ProbeRuns::Result r = probes.run(s);
        if (!r.succeeded()) return std::make_pair(Measured{}, r.failure(o.probe_timeout_s));
        const Measured m = measure(r);
        std::cerr << "  " << label << ": " << msText(m.ms) << " a step, " << formatRate(m.tokens_per_s) << " tokens/s"
                  << std::endl;
        return std::make_pair(m, std::string());
    };

    // Calibration on the first layout that can run (the most data-parallel one): the same layout at
    // twice the global batch doubles the FLOPs and leaves the gradients' communication as it is.
    // The small one also times each unit and all-reduces of a few sizes after its steps.
    const size_t calibrationIndex = usable.front();
    const LayoutOption& calibration = options[calibrationIndex];
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
    const std::vector<MeasuredCollective>& collectives = probed.collectives;
    StepTimeModel model;
    try {
        model = calibrateStepTime(small, smallRun.ms, large, largeRun.ms, probed);
    } catch (const std::invalid_argument& e) {
        throw CliError(std::string("advise: the calibration probe ") + calibration.label + " measured what cannot be used: " +
                       e.what());
    }

    for (size_t i : usable) options[i].predicted_ms = model.predictMs(options[i].spec);
    // Best predicted first; where the model cannot tell two apart (ZeRO 1 and 2 move as much as 0),
    // the one that needs less memory.
    std::stable_sort(usable.begin(), usable.end(), [&](size_t a, size_t b) {
        const double pa = options[a].predicted_ms, pb = options[b].predicted_ms;
        if (std::fabs(pa - pb) > 1e-3 * std::max(pa, pb)) return pa < pb;
        return options[a].memory_bytes < options[b].memory_bytes;
    });

    // The best few by the model, tried side by side on the devices. The calibration's layout is
    // measured already, whether the model puts it among them or not.
    std::map<size_t, Measured> measured{{calibrationIndex, smallRun}};
    std::map<size_t, std::string> failed;
    // One layout of each shape (dp x tp x pp), its best ZeRO stage: trying three ZeRO stages of one
    // shape would say little about the others.
    std::vector<size_t> tried;
    for (size_t i : usable) {
        if (tried.size() == static_cast<size_t>(o.try_count)) break;
        const ParallelSpec& p = options[i].spec.parallel;
        const bool seen = std::any_of(tried.begin(), tried.end(), [&](size_t j) {
            const ParallelSpec& q = options[j].spec.parallel;
            return q.dp == p.dp && q.tp == p.tp && q.pp == p.pp;
        });
        if (!seen) tried.push_back(i);
    }
    for (const size_t i : tried) {
        if (i == calibrationIndex) continue;
        RunSpec s = options[i].spec;
        s.name = probeName(spec, options[i].label, "");
        const auto [m, error] = probe(s, options[i].label);
        if (error.empty()) measured[i] = m;
        else failed[i] = error;
    }
    std::vector<size_t> ranked;
    for (const auto& [i, m] : measured) ranked.push_back(i);
    std::sort(ranked.begin(), ranked.end(),
              [&](size_t a, size_t b) { return measured.at(a).tokens_per_s > measured.at(b).tokens_per_s; });
    std::map<size_t, size_t> rankOf;
    for (size_t r = 0; r < ranked.size(); ++r) rankOf[ranked[r]] = r + 1;

    const double tokensPerStep = static_cast<double>(estimate(small).tokens_per_step);
    if (o.csv) {
        std::cout << "layout,excluded,memory_bytes,predicted_ms,measured_tokens_per_s,measured_ms,measured_rank\n";
        for (size_t i = 0; i < options.size(); ++i) {
            const LayoutOption& l = options[i];
            std::string excluded = l.excluded;
            std::replace(excluded.begin(), excluded.end(), ',', ';');
            std::replace(excluded.begin(), excluded.end(), '\n', ' ');
            const auto m = measured.find(i);
            std::cout << l.label << "," << excluded << "," << static_cast<int64_t>(l.memory_bytes) << ","
                      << (l.excluded.empty() ? formatExact(l.predicted_ms) : "") << ","
                      << (m != measured.end() ? formatExact(m->second.tokens_per_s) : "") << ","
                      << (m != measured.end() ? formatExact(m->second.ms) : "") << ","
                      << (rankOf.count(i) ? std::to_string(rankOf.at(i)) : "") << "\n";
        }
        std::cout.flush();
    } else {
        char rates[160];
        std::snprintf(rates, sizeof rates, "calibrated on %s: %s FLOP/s per rank, %s/s of communication",
                      calibration.label.c_str(), formatCount(model.flops_per_s).c_str(),
                      std::isfinite(model.bytes_per_s) ? formatBytes(model.bytes_per_s).c_str() : "no measurable time");
        std::cout << rates;
        if (!collectives.empty()) {
            std::snprintf(rates, sizeof rates, " (%zu all-reduce sizes timed: %.1f us a ring step)", collectives.size(),
                          model.hop_latency_s * 1e6);
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
            const auto m = measured.find(i);
            std::string note = l.excluded;
            if (rankOf.count(i)) note = "#" + std::to_string(rankOf.at(i)) + " measured";
            else if (failed.count(i)) note = "failed: " + failed.at(i);
            else if (note.empty()) note = "not tried";
            t.addRow({l.label, l.memory_bytes > 0 ? formatBytes(l.memory_bytes) : "-",
                      l.excluded.empty() ? msText(l.predicted_ms) : "-",
                      m != measured.end() ? formatRate(m->second.tokens_per_s) : "-",
                      m != measured.end() ? msText(m->second.ms) : "-", note});
        }
        t.print(std::cout);
        if (!ranked.empty()) {
            const size_t best = ranked.front();
            std::cout << "\nbest measured: " << options[best].label << ", " << formatRate(measured.at(best).tokens_per_s)
                      << " tokens/s (predicted " << formatRate(tokensPerStep / (options[best].predicted_ms / 1000.0))
                      << "); set it in [parallel] of " << o.spec << std::endl;
        }
    }
    return ranked.empty() ? ExitCode::RunFailed : ExitCode::Ok;
}

} // namespace parallax
