#include "app/cli/CliError.h"
#include "app/cli/Commands.h"
#include "app/cli/Format.h"
#include "app/cli/WorkerLocator.h"
#include "core/captions/CaptionDatasetSummary.h"
#include "core/captions/InStepEncoders.h"
#include "core/launch/LaunchPlan.h"
#include "core/launch/Preflight.h"
#include "core/launch/RunFolders.h"
#include "core/spec/ClusterProfile.h"
#include "core/spec/DiskEstimate.h"
#include "core/spec/Estimates.h"
#include "core/spec/MachineInfo.h"
#include "core/spec/ModelKinds.h"
#include "core/spec/SpecIO.h"
#include "core/spec/SpecValidator.h"

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>

namespace parallax {

namespace fs = std::filesystem;

namespace {

void row(const std::string& name, const std::string& value) { std::printf("  %-16s %s\n", name.c_str(), value.c_str()); }

void memoryRows(const MemoryEstimate& m, const char* indent) {
    const std::pair<const char*, double> parts[] = {{"weights", m.weights},
                                                    {"gradients", m.gradients},
                                                    {"optimizer", m.optimizer},
                                                    {"activations", m.activations},
                                                    {"buffers", m.buffers},
                                                    {"runtime", m.runtime}};
    for (const auto& [name, bytes] : parts)
        std::printf("  %s%-*s %s\n", indent, 16 - static_cast<int>(std::strlen(indent)), name, formatBytes(bytes).c_str());
}

// A qwen_image run without a complete latent cache: the encoders every rank loads besides the model.
void encoderRows(const RunSpec& spec, double modelBytes) {
    const ModelKindInfo* kind = modelKindInfo(spec.model.kind);
    if (kind == nullptr || !readsLatents(*kind) || spec.data.kind != DataKind::Latents || spec.model.from.empty()) return;
    const CaptionDatasetSummary data = summarizeCaptionDataset(spec.data.path, spec.model.from, spec.data.max_pixels);
    if (!data.ok()) return; // a folder of latent shards, or a dataset whose problem the data check names
    const std::optional<InStepEncoders> encoders = inStepEncoders(spec, data.cache);
    if (!encoders) return;
    std::printf("  %-16s %s (no complete latent cache, %lld of %lld samples: every rank loads the text encoder, "
                "%s values, and the VAE's encoder, %s, frozen; `parallax-cli cache SPEC` once leaves them out)\n",
                "encoders", formatBytes(encoders->bytes()).c_str(), static_cast<long long>(data.cache.samples_done),
                static_cast<long long>(data.samples), formatCount(double(encoders->text_values)).c_str(),
                formatCount(double(encoders->vae_values)).c_str());
    row("memory/device with the encoders", formatBytes(modelBytes + encoders->bytes()));
}

// Preflight of every host, one line each; returns the number of problems.
size_t checkHostsOverSsh(const ClusterProfile& cluster, const std::string& worker, const std::string& runsRoot,
                         const RunSpec& spec) {
    std::cout << "\nhosts (" << cluster.source << "), checked over ssh:" << std::endl;
    std::error_code ec;
    fs::create_directories(runsRoot, ec); // the folder the hosts must share
    PreflightOptions o;
    o.local_worker = worker;
    o.shared_folder = runsRoot;
    o.processes = spec.processCount();
    const std::vector<HostCheck> checks = preflight(cluster, o);
    for (const HostCheck& h : checks) {
        if (h.reachable)
            std::printf("  %-16s %s, %lld cores, %d ms, %s\n", h.host.c_str(), h.hostname.c_str(),
                        static_cast<long long>(h.cores), static_cast<int>(h.latency_ms), ("worker sha256 " + h.worker_build.substr(0, 12)).c_str());
        else
            std::printf("  %-16s not reachable\n", h.host.c_str());
        for (const std::string& n : h.notes) std::printf("    note: %s\n", n.c_str());
    }
    const std::vector<std::string> problems = preflightProblems(checks);
    for (const std::string& p : problems) std::printf("  problem: %s\n", p.c_str());
    if (problems.empty()) std::cout << "  every host is ready" << std::endl;
    else std::cout << "\nnot ready to launch: " << problems.size() << (problems.size() == 1 ? " problem" : " problems")
                   << " with the hosts (above)" << std::endl;
    return problems.size();
}

// The run's disk use per hour (DiskEstimate.h) at steps of a second.
void diskRows(const RunSpec& spec) {
    const DiskEstimate d = estimateDiskUse(spec, 1.0);
    std::cout << "\ndisk per hour (" << d.ranks << (d.ranks == 1 ? " rank" : " ranks") << ", at 1 s steps):\n";
    row("store", diskSizeText(d.store_bytes_per_hour) + "/h (" + formatCount(d.rows_per_hour) +
                     " rows/h sent; older telemetry thinned), and " + diskSizeText(d.store_raw_window_bytes) +
                     " more for the last " + std::to_string(spec.retention.raw_telemetry_minutes) + " min at full rate");
    row("output.log.gz", diskSizeText(d.output_bytes_per_hour) + "/h compressed");
    row("total", diskSizeText(d.bytesPerHour()) + "/h, " + diskSizeText(d.bytes_per_day) + " a day (output kept: " +
                     (spec.retention.output_keep_mb > 0 ? std::to_string(spec.retention.output_keep_mb) + " MiB"
                                                        : std::string("all")) + ")");
    for (const std::string& line : d.lines) std::cout << "    " << line << "\n";
    for (const std::string& w : d.warnings) std::cout << "  warning: " << w << "\n";
    std::cout << std::flush;
}

} // namespace

int checkCommand(const std::string& storePath, const std::string& specPath) {
    const RunSpec spec = readSpecFile(specPath);
    const MachineInfo machine = thisMachine();
    const std::vector<SpecIssue> issues = validateSpec(spec, machine);
    const bool errors = hasErrors(issues);
    if (spec.launch.target == Target::Local)
        std::cout << "checked against this machine: " << machine.cores << " cores, "
                  << formatBytes(static_cast<double>(machine.ram_bytes)) << " of memory" << std::endl;
    if (issues.empty())
        std::cout << specPath << ": no problems found in the spec" << std::endl;
    else
    {
        std::string text = formatIssues(issues);
        while (!text.empty() && text.back() == '\n')
            text.pop_back();
        std::cout << specPath << ": " << (errors ? "errors" : "warnings") << "\n" << text << std::endl;
    }

    std::cout << "\nestimates for " << spec.name << " (" << spec.model.kind.name() << " " << spec.model.preset << ", dp"
              << spec.parallel.dp << " tp" << spec.parallel.tp << " pp" << spec.parallel.pp << " zero"
              << spec.parallel.zero << ")\n";
    try {
        const Estimates e = estimate(spec);
        std::string params = formatCount(static_cast<double>(e.params));
        if (e.trainable_params != e.params)
            params += " (" + formatCount(static_cast<double>(e.trainable_params)) + " trainable)";
        row("parameters", params);
        row("FLOPs/token", formatCount(e.flops_per_token) + " (training: forward + backward)");
        row("tokens/step", formatCount(static_cast<double>(e.tokens_per_step)));
        const bool stages = e.memory_per_stage.size() > 1;
        row("memory/device", formatBytes(e.memory.total()) + (stages ? " (pipeline stage 0, the most loaded)" : ""));
        memoryRows(e.memory, "  ");
        encoderRows(spec, e.memory.total());
        if (stages) {
            for (size_t i = 0; i < e.memory_per_stage.size(); ++i)
                row("  stage " + std::to_string(i), formatBytes(e.memory_per_stage[i].total()));
        }
        if (spec.parallel.pp > 1)
            row("pipeline bubble", formatPercent(e.bubble) + " theoretical (" + spec.parallel.schedule.name() + ", " +
                                       std::to_string(spec.parallel.pp) + " stages, " +
                                       std::to_string(spec.accumulation()) + " micro-batches)");
        else
            row("pipeline bubble", "none (pp = 1)");
    } catch (const std::exception& e) {
        row("unavailable", e.what());
    }
    diskRows(spec);

    if (!errors) {
        LaunchContext c;
        c.worker = expectedWorkerPath();
        c.spec_path = fs::absolute(specPath).string();
        c.run_dir = (fs::path(RunFolders::rootFor(fs::absolute(storePath).string())) / "<id>").string();
        try {
            if (spec.launch.target == Target::Hosts) {
                c.cluster = resolveHosts(spec);
                if (checkHostsOverSsh(*c.cluster, c.worker, fs::path(c.run_dir).parent_path().string(), spec) != 0)
                    return ExitCode::Error;
            }
            const LaunchPlan plan = makeLaunchPlan(spec, c);
            std::cout << "\nlaunch command (the run gets a folder of its own and a copy of the spec):\n  "
                      << plan.commandLine() << std::endl;
        } catch (const std::invalid_argument& e) {
            std::cout << "\ncannot launch: " << e.what() << std::endl;
            return ExitCode::Usage;
        } catch (const SpecError& e) {
            std::cout << "\ncannot launch: " << e.what() << std::endl;
            return ExitCode::Usage;
        }
    }
    return errors ? ExitCode::Usage : ExitCode::Ok;
}

} // namespace parallax
