#include "tests/trainer/support/WorkerRun.h"

#include "core/launch/OutputDemux.h"
#include "core/telemetry/TelemetryCodec.h"

#include "core/util/Files.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <mutex>

namespace parallax::testing {

std::vector<double> WorkerRun::losses() const {
    std::vector<double> out;
    for (const StepEvent& s : steps) out.push_back(s.loss);
    return out;
}

std::string WorkerRun::lastCheckpoint() const {
    const std::string dir = joinPath(runDir, "checkpoints");
    std::vector<std::string> complete;
    if (!isDirectory(dir)) return {};
    for (const std::string& name : listDirectory(dir))
        if (pathExists(joinPath(joinPath(dir, name), "manifest.json"))) complete.push_back(joinPath(dir, name));
    if (complete.empty()) return {};
    return *std::max_element(complete.begin(), complete.end());
}

std::string workerPath() {
    return buildDir() + "/app/parallax-worker";
}

std::map<int64_t, std::vector<SpanEvent>> WorkerRun::spansByStep() const {
    std::map<int64_t, std::vector<SpanEvent>> out;
    for (const SpanEvent& s : spans) out[s.step].push_back(s);
    return out;
}

WorkerRun runWorker(const std::string& specToml, int ranks, const std::string& runDir,
                    const std::vector<std::string>& extraArgs) {
    createDirectories(runDir);
    const std::string specPath = runDir + "/spec.toml";
    {
        std::ofstream out(specPath);
        out << specToml;
    }
    // Tagged output, reassembled per rank as the supervisor does: Open MPI forwards chunks, not lines.
    std::vector<std::string> args = {"mpirun", "-np", std::to_string(ranks), "--oversubscribe", "--bind-to", "none",
                                     "--tag-output",
                                     "-x", "OMP_NUM_THREADS=1", workerPath(), "--spec", specPath, "--run-dir", runDir,
                                     "--threads", "1"};
    args.insert(args.end(), extraArgs.begin(), extraArgs.end());
    const ProcessResult result = runProcess(args);
    WorkerRun run;
    run.runDir = runDir;
    run.exitCode = result.exitCode;
    run.output = result.output;

    std::vector<std::string> lines;
    OutputDemux demux(LauncherFormat::OpenMpi);
    const OutputDemux::Sink sink = [&](const DemuxedLine& l) { lines.emplace_back(l.payload); };
    size_t start = 0;
    while (start < run.output.size()) {
        size_t end = run.output.find('\n', start);
        if (end == std::string::npos) end = run.output.size();
        demux.feed(OutputStream::Stdout, std::string_view(run.output).substr(start, end - start), sink);
        start = end + 1;
    }
    demux.finish(sink);
    for (const std::string& line : lines) {
        DecodedLine d = decodeLine(line);
        if (d.kind != DecodedLine::Kind::Event) {
            run.logs.push_back(line);
            continue;
        }
        if (auto* s = std::get_if<StepEvent>(&d.event)) run.steps.push_back(*s);
        else if (auto* sp = std::get_if<SpanEvent>(&d.event)) run.spans.push_back(*sp);
        else if (auto* u = std::get_if<UnitTimeEvent>(&d.event)) run.unit_times.push_back(*u);
        else if (auto* c = std::get_if<CollectiveTimeEvent>(&d.event)) run.collective_times.push_back(*c);
        else if (auto* a = std::get_if<SampleEvent>(&d.event)) run.samples.push_back(*a);
        else if (auto* l = std::get_if<LogEvent>(&d.event)) run.logs.push_back(l->level + ": " + l->message);
        else if (auto* e = std::get_if<RunEndEvent>(&d.event)) {
            if (run.endStatus.empty() || e->status == "failed") {
                run.endStatus = e->status;
                run.endReason = e->reason;
            }
        }
    }
    return run;
}

double maxRelativeDifference(const std::vector<double>& a, const std::vector<double>& b) {
    if (a.size() != b.size()) return INFINITY;
    double worst = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        const double scale = std::max({std::fabs(a[i]), std::fabs(b[i]), 1e-12});
        worst = std::max(worst, std::fabs(a[i] - b[i]) / scale);
    }
    return worst;
}

const WorkerRun& runOnce(const std::string& key, const std::function<WorkerRun(const std::string& dir)>& make) {
    static std::map<std::string, WorkerRun> runs;
    static std::mutex mutex;
    static TempDir scratch;
    std::lock_guard<std::mutex> lock(mutex);
    auto it = runs.find(key);
    if (it == runs.end()) it = runs.emplace(key, make(scratch.path() + "/" + key)).first;
    return it->second;
}

} // namespace parallax::testing
