// parallax-cli fit: the largest micro-batch a spec's layout runs with, found by short probe runs on
// the spec's own target, with and without activation checkpointing.
#include "app/cli/CliError.h"
#include "app/cli/Commands.h"
#include "app/cli/Format.h"
#include "app/cli/ProbeRuns.h"
#include "app/cli/TextTable.h"
#include "core/launch/SpecRejected.h"
#include "core/spec/Estimates.h"
#include "core/spec/MachineInfo.h"
#include "core/spec/MicroBatchFit.h"
#include "core/spec/SpecIO.h"
#include "core/spec/SpecValidator.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <iostream>

namespace parallax {

namespace {

// A probe whose estimate, corrected by what the last probe measured, is this far past the limit is
// not run: doubling must not take a machine into swap or the kernel's OOM killer to learn what the
// estimate already says.
constexpr double kSkipFactor = 2.0;

struct Prober {
    const RunSpec& spec;
    ProbeRuns& probes;
    const FitCommandOptions& o;
    double limit = 0;
    std::vector<FitProbe> ran; // of this series, to correct the next estimate

    FitProbe operator()(int64_t microBatch, bool checkpointing) {
        FitProbe p;
        p.micro_batch = microBatch;
        const RunSpec probe = fitProbeSpec(spec, microBatch, checkpointing, o.steps);
        try {
            p.estimate_bytes = estimate(probe).memory.total();
        } catch (const std::exception&) {
            p.estimate_bytes = 0;
        }
        const MemoryCorrection correction = correctEstimate(ran);
        if (correction.probes > 0 && p.estimate_bytes > 0 && correction.predict(p.estimate_bytes) > kSkipFactor * limit) {
            p.failure = "not run: the estimate corrected by the probes, " +
                        formatBytes(correction.predict(p.estimate_bytes)) + ", is far past the limit";
            return p;
        }
        std::cerr << "probing micro-batch " << microBatch << (checkpointing ? " with" : " without")
                  << " activation checkpointing..." << std::endl;
        const ProbeRuns::Result r = probes.run(probe);
        p.seconds = r.seconds;
        double peak = 0;
        for (const StepEvent& e : r.steps)
            if (std::isfinite(e.peak_mem)) peak = std::max(peak, e.peak_mem);
        p.peak_bytes = peak;
        p.ran = r.succeeded() && peak > 0;
        p.timed_out = r.timed_out;
        if (!p.ran) {
            p.failure = r.succeeded() ? "ran without a memory reading" : r.failure(o.probe_timeout_s);
            if (p.timed_out) p.failure += ": undecided";
            return p;
        }
        ran.push_back(p);
        p.fits = peak <= limit;
        if (!p.fits) p.failure = "peak past the limit";
        return p;
    }
};

std::string correctedText(const MemoryCorrection& c, const FitProbe& p) {
    return c.probes > 0 && p.estimate_bytes > 0 ? formatBytes(c.predict(p.estimate_bytes)) : "-";
}

// Why a series has no answer: the probe that timed out, what is known below it, and the fix.
void printUndecided(const FitSearch& search, const char* how, const FitCommandOptions& o) {
    const FitProbe& stopped = *search.probeOf(search.undecided);
    std::cerr << "fit: could not decide " << how << ": the probe of micro-batch " << search.undecided << " "
              << stopped.failure.substr(0, stopped.failure.rfind(": undecided")) << ", so whether it fits is not known; "
              << (search.largest > 0 ? "micro-batch " + std::to_string(search.largest) + " fits, larger ones are unknown"
                                     : std::string("no micro-batch is known to fit"))
              << "; give each probe more time with --probe-timeout (now " << formatDuration(o.probe_timeout_s) << ")"
              << std::endl;
}

// The answer of one series; false when there is none (not even micro-batch 1 fits, or a probe
// timed out before the search could tell).
bool printAnswer(const FitSearch& search, bool checkpointing, double limit, const FitCommandOptions& o) {
    const char* how = checkpointing ? "with activation checkpointing" : "without activation checkpointing";
    if (!search.decided()) printUndecided(search, how, o);
    if (search.largest == 0) {
        if (search.decided())
            std::cerr << "fit: not even micro-batch 1 fits " << how
                      << "; shard more (parallel.zero = 3), split the model (parallel.tp, parallel.pp)"
                      << (checkpointing ? "" : " or turn on train.activation_checkpointing") << std::endl;
        return false;
    }
    if (o.csv) return search.decided();
    const FitProbe& best = *search.probeOf(search.largest);
    std::cout << "largest micro-batch " << (search.decided() ? "" : "known to fit ") << how << ": " << search.largest
              << " (peak " << formatBytes(best.peak_bytes) << " of " << formatBytes(limit) << ")"
              << (search.at_maximum ? ", the most asked for (--max-micro-batch)" : "")
              << (search.decided() ? "" : "; " + std::to_string(search.undecided) + " timed out") << std::endl;
    const MemoryCorrection c = correctEstimate(search.probes);
    if (c.probes > 0) {
        char scale[32];
        std::snprintf(scale, sizeof scale, "%.2f", c.scale);
        std::cout << "  measured peak ~ " << formatBytes(c.base) << " + " << scale << " x the estimate (fitted to "
                  << c.probes << " probes; the estimate of micro-batch " << search.largest << " alone is "
                  << formatBytes(best.estimate_bytes) << ", corrected " << formatBytes(c.predict(best.estimate_bytes))
                  << ")" << std::endl;
    }
    return search.decided();
}

std::vector<FitProbe> sortedProbes(const FitSearch& search) {
    std::vector<FitProbe> sorted = search.probes;
    std::sort(sorted.begin(), sorted.end(),
              [](const FitProbe& a, const FitProbe& b) { return a.micro_batch < b.micro_batch; });
    return sorted;
}

// The series to search (without and with activation checkpointing), after the spec and the
// options are checked.
std::vector<bool> checkedSeries(const RunSpec& spec, const MachineInfo& machine, const FitCommandOptions& o) {
    const std::vector<SpecIssue> issues = validateSpec(spec, machine);
    if (hasErrors(issues)) throw SpecRejected(issues);
    if (o.max_micro_batch < 1) throw CliError("--max-micro-batch must be at least 1", ExitCode::Usage);
    if (o.steps < 2) throw CliError("--steps must be at least 2: the first step warms up", ExitCode::Usage);
    checkProbeTimeout(o.probe_timeout_s);
    std::vector<bool> series;
    if (o.checkpointing == "off" || o.checkpointing == "both") series.push_back(false);
    if (o.checkpointing == "on" || o.checkpointing == "both") series.push_back(true);
    if (series.empty())
        throw CliError("--activation-checkpointing \"" + o.checkpointing + "\" is none of off, on, both", ExitCode::Usage);
    return series;
}

struct MemoryLimit {
    double bytes = 0;
    std::string source; // where the limit comes from, for the heading
};

// What the most loaded rank's peak is held against.
MemoryLimit memoryLimit(const RunSpec& spec, const MachineInfo& machine, const FitCommandOptions& o) {
    if (!o.memory_limit.empty())
        return {parseByteSize(o.memory_limit, "--memory-limit"), "--memory-limit"};
    if (spec.launch.device == Device::Cuda)
        throw CliError("fit: give the memory of one GPU with --memory-limit (e.g. 80GiB); it is what each "
                       "probe's allocator peak is held against", ExitCode::Usage);
    if (spec.launch.target == Target::Local && machine.ram_bytes > 0) {
        // The ranks of a local run share this machine's memory.
        return {static_cast<double>(machine.ram_bytes) / static_cast<double>(std::max<int64_t>(1, spec.processCount())),
                "this machine's memory divided among " + std::to_string(spec.processCount()) + " ranks"};
    }
    throw CliError("fit: give the memory one rank may use on its host with --memory-limit (e.g. 16GiB)",
                   ExitCode::Usage);
}

using SeriesResults = std::vector<std::pair<bool, FitSearch>>;

// Each series' search, its probes' progress on stderr.
SeriesResults searchSeries(Prober& prober, const std::vector<bool>& series, const FitCommandOptions& o) {
    SeriesResults results;
    for (const bool checkpointing : series) {
        prober.ran.clear();
        FitSearch search = searchLargestMicroBatch(
            [&](int64_t mb) { return prober(mb, checkpointing); }, o.max_micro_batch,
            [&](const FitProbe& p) {
                std::cerr << "  micro-batch " << p.micro_batch << ": "
                          << (p.ran ? formatBytes(p.peak_bytes) + (p.fits ? ", fits" : ", past the limit")
                                    : p.failure)
                          << std::endl;
            });
        results.emplace_back(checkpointing, std::move(search));
    }
    return results;
}

void printCsv(const SeriesResults& results) {
    std::cout << "activation_checkpointing,micro_batch,ran,peak_bytes,estimate_bytes,fits,largest,timed_out\n";
    for (const auto& [checkpointing, search] : results) {
        for (const FitProbe& p : sortedProbes(search))
            std::cout << (checkpointing ? 1 : 0) << "," << p.micro_batch << "," << (p.ran ? 1 : 0) << ","
                      << static_cast<int64_t>(p.peak_bytes) << "," << static_cast<int64_t>(p.estimate_bytes) << ","
                      << (p.fits ? 1 : 0) << "," << (p.micro_batch == search.largest ? 1 : 0) << ","
                      << (p.timed_out ? 1 : 0) << "\n";
    }
    std::cout.flush();
}

void printSeriesTable(const FitSearch& search, bool checkpointing) {
    TextTable t;
    t.addColumn("micro-batch", TextTable::Align::Right);
    t.addColumn("peak", TextTable::Align::Right);
    t.addColumn("estimate", TextTable::Align::Right);
    t.addColumn("corrected", TextTable::Align::Right);
    t.addColumn("result");
    const MemoryCorrection c = correctEstimate(search.probes);
    for (const FitProbe& p : sortedProbes(search))
        t.addRow({std::to_string(p.micro_batch), p.ran ? formatBytes(p.peak_bytes) : "-",
                  p.estimate_bytes > 0 ? formatBytes(p.estimate_bytes) : "-", correctedText(c, p),
                  p.fits ? "fits" : p.failure});
    std::cout << "\n" << (checkpointing ? "with" : "without") << " activation checkpointing:\n";
    t.print(std::cout);
}

} // namespace

int fitCommand(const std::string& storePath, const FitCommandOptions& o) {
    const RunSpec spec = readSpecFile(o.spec);
    const MachineInfo machine = thisMachine();
    const std::vector<bool> series = checkedSeries(spec, machine, o);
    const MemoryLimit limit = memoryLimit(spec, machine, o);

    if (!o.csv)
        std::cout << "fit " << spec.name << " (" << spec.model.kind.name() << " " << spec.model.preset << ", "
                  << spec.parallel.dp << "x dp, " << spec.parallel.tp << "x tp, " << spec.parallel.pp << "x pp, zero "
                  << spec.parallel.zero << ", " << spec.launch.device.name() << "): the most loaded rank's peak "
                  << "against " << formatBytes(limit.bytes) << " (" << limit.source << "), " << o.steps
                  << " steps per probe" << std::endl;

    ProbeRuns probes(storePath, "fit", o.probe_timeout_s);
    Prober prober{spec, probes, o, limit.bytes, {}};
    const SeriesResults results = searchSeries(prober, series, o);
    if (o.csv)
        printCsv(results);

    bool every = true;
    bool undecided = false;
    for (const auto& [checkpointing, search] : results) {
        if (!o.csv)
            printSeriesTable(search, checkpointing);
        every = printAnswer(search, checkpointing, limit.bytes, o) && every;
        undecided = undecided || !search.decided();
    }
    // A timed-out probe leaves the question open: no answer is given as if it were one.
    if (undecided) return ExitCode::Error;
    return every ? ExitCode::Ok : ExitCode::RunFailed;
}

} // namespace parallax
