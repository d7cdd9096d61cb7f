#include "bench/scale/ScaleRun.h"

#include "bench/scale/ScaleLayout.h"
#include "bench/scale/StoredTelemetry.h"
#include "core/launch/Supervisor.h"
#include "core/spec/SpecIO.h"

#include <fcntl.h>
#include <spawn.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <iostream>
#include <fstream>
#include <sstream>

extern char** environ;

namespace parallax::scale {

std::optional<Emitted> readEmitted(const std::string& path) {
    std::ifstream in(path);
    if (!in) return std::nullopt;
    Emitted e;
    std::string key;
    double value = 0;
    while (in >> key >> value) {
        if (key == "t0") e.t0 = value;
        else if (key == "hang_rank") e.hang_rank = static_cast<int>(value);
        else if (key == "straggler_rank") e.straggler_rank = static_cast<int>(value);
        else e.lines[key] = static_cast<int64_t>(value);
    }
    return e;
}

std::map<std::string, int64_t> storedRows(const RunStore& store, int64_t run) {
    std::map<std::string, int64_t> rows;
    rows["run_start"] = store.runStart(run) ? 1 : 0;
    int64_t text = 0;
    for (const LogRow& row : store.logs(run))
        if (row.rank >= 0 && row.stream == "stdout") ++text;
    rows["text"] = text;
    rows["step"] = static_cast<int64_t>(store.metrics(run).size());
    // Thinned rows stand for several lines each (StoredTelemetry.h).
    const StoredTelemetry telemetry = storedTelemetry(store, run);
    rows["device"] = telemetry.deviceSamples;
    rows["rank_step"] = telemetry.rankSteps;
    rows["comm"] = static_cast<int64_t>(store.comms(run).size());
    int64_t spans = 0;
    for (int64_t step : store.spanSteps(run)) spans += static_cast<int64_t>(store.spans(run, step).size());
    rows["span"] = spans;
    const std::optional<RunRecord> record = store.run(run);
    rows["run_end"] = record && record->state == RunState::Succeeded ? 1 : 0;
    return rows;
}

std::vector<std::string> mismatches(const Emitted& emitted, const std::map<std::string, int64_t>& stored) {
    std::vector<std::string> out;
    std::map<std::string, int64_t> all = stored;
    for (const auto& [kind, n] : emitted.lines) all.emplace(kind, 0);
    for (const auto& [kind, rows] : all) {
        const auto written = emitted.lines.find(kind);
        const int64_t lines = written == emitted.lines.end() ? 0 : written->second;
        const auto kept = stored.find(kind);
        const int64_t count = kept == stored.end() ? -1 : kept->second;
        if (lines != count)
            out.push_back(kind + ": " + std::to_string(lines) + " lines written, " +
                          (count < 0 ? std::string("no such rows counted") : std::to_string(count) + " rows stored"));
    }
    return out;
}

CheckedSpec scaleSpec(int ranks, double seconds, int64_t hangAfterS, int64_t rawMinutes) {
    const Layout l = layoutFor(ranks);
    RunSpec spec;
    spec.name = "scale-" + std::to_string(ranks);
    spec.parallel.dp = l.dp;
    spec.parallel.tp = l.tp;
    spec.parallel.pp = l.pp;
    spec.train.steps = std::max<int64_t>(1, static_cast<int64_t>(seconds / kStepSeconds));
    spec.train.checkpoint_every = 0;
    spec.launch.target = Target::Local;
    spec.telemetry.hang_after_s = hangAfterS;
    if (rawMinutes > 0) spec.retention.raw_telemetry_minutes = rawMinutes;
    CheckedSpec checked;
    checked.spec = spec;
    checked.text = toToml(spec);
    return checked;
}

RunRecord superviseScaleRun(RunStore& store, int ranks, double seconds, const std::string& launcher,
                            bool handleSignals, int64_t hangAfterS, int64_t rawMinutes) {
    SupervisorOptions o;
    o.spec = scaleSpec(ranks, seconds, hangAfterS, rawMinutes);
    o.launch.launcher = launcher;
    o.launch.worker = launcher;
    o.handle_signals = handleSignals;
    Supervisor supervisor(store, std::move(o));
    return supervisor.run();
}

pid_t spawnSelf(const std::vector<std::string>& arguments, const std::string& log, const char* who) {
    std::vector<std::string> args = {"/proc/self/exe"};
    char self[4096] = {};
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) args[0].assign(self, static_cast<size_t>(n));
    args.insert(args.end(), arguments.begin(), arguments.end());
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = -1;
    const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
        std::cerr << who << ": cannot start " << args[0] << ": " << std::strerror(rc) << "\n";
        std::exit(1);
    }
    return pid;
}

} // namespace parallax::scale
