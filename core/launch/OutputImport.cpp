#include "core/launch/OutputImport.h"

#include "core/launch/OutputRouter.h"
#include "core/launch/ProcessTable.h"
#include "core/spec/SpecIO.h"
#include "core/store/BatchedWriter.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace parallax {

namespace {

constexpr size_t kRowsPerBatch = 20000;

std::string outputLogOf(const RunRecord& run) { return run.run_dir + "/output.log"; }

LauncherFormat formatOf(const RunRecord& run, bool* localTarget) {
    *localTarget = true;
    try {
        const RunSpec spec = parseSpec(run.spec_toml, "run " + std::to_string(run.id));
        *localTarget = spec.launch.target == Target::Local;
        return spec.launch.target == Target::Slurm ? LauncherFormat::Slurm : LauncherFormat::OpenMpi;
    } catch (const std::exception&) {
        return LauncherFormat::OpenMpi; // the spec ran, so it parsed then; the lines still import
    }
}

double fileTime(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 ? static_cast<double>(st.st_mtime) : 0;
}

} // namespace

OutputImport importOutput(RunStore& store, const RunRecord& run, int64_t from, int64_t to) {
    const std::string path = outputLogOf(run);
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw std::runtime_error("cannot read " + path + ": " + std::strerror(errno));
    in.seekg(0, std::ios::end);
    OutputImport result;
    result.file_bytes = static_cast<int64_t>(in.tellg());
    result.from = result.to = std::min(from, result.file_bytes);
    const int64_t end = to < 0 ? result.file_bytes : std::min(to, result.file_bytes);
    in.seekg(result.from);

    bool localTarget = true;
    const LauncherFormat format = formatOf(run, &localTarget);
    BatchedWriter writer(store, run.id, std::chrono::hours(24), SIZE_MAX);
    int64_t position = result.from;
    writer.setOutputOffsetSource([&position] { return position; });
    OutputRouter router(writer, format, run.supervisor_host, localTarget);
    if (const std::optional<RunStartEvent> start = store.runStart(run.id))
        router.setRankHosts(start->hosts);
    const double fallbackTime = run.ended_at > 0 ? run.ended_at : fileTime(path);

    std::string line;
    while (position < end && std::getline(in, line)) {
        if (in.eof())
            break; // no newline: an unfinished last line, not imported
        line.push_back('\n');
        const double now = router.lastEventTime() > 0 ? router.lastEventTime() : fallbackTime;
        router.append(OutputStream::Stdout, line.data(), line.size(), now);
        position += static_cast<int64_t>(line.size());
        if (writer.pendingRows() >= kRowsPerBatch) {
            result.rows += writer.pendingRows();
            writer.flush();
        }
    }
    router.finish(router.lastEventTime() > 0 ? router.lastEventTime() : fallbackTime);
    result.rows += writer.pendingRows();
    writer.flush();
    if (writer.pendingRows() == 0 && position != result.from)
        store.setOutputOffset(run.id, position); // lines that made no row still count as imported
    result.to = position;
    result.run_end = router.runEnd();
    result.last_step = router.lastStep();
    return result;
}

std::string recoverRunOutput(RunStore& store, int64_t runId, const std::string& thisHost) {
    const std::optional<RunRecord> found = store.run(runId);
    if (!found)
        throw std::runtime_error("no run " + std::to_string(runId) + " in " + store.path());
    const RunRecord& run = *found;
    const std::string id = std::to_string(run.id);
    if (!RunState::isTerminal(run.state) && run.supervisor_pid > 0) {
        if (run.supervisor_host != thisHost)
            throw std::runtime_error("run " + id + " is " + run.state + " under a supervisor on " +
                                     run.supervisor_host + " (pid " + std::to_string(run.supervisor_pid) +
                                     "); import it there once that supervisor has ended");
        if (processIsRunning(static_cast<pid_t>(run.supervisor_pid)))
            throw std::runtime_error("run " + id + " is " + run.state + ": its supervisor (pid " +
                                     std::to_string(run.supervisor_pid) + " on " + thisHost +
                                     ") writes its rows itself");
    }
    const std::optional<int64_t> offset = store.outputOffset(run.id);
    if (!offset)
        throw std::runtime_error("run " + id + " was recorded by an earlier version that did not track how much of "
                                 "output.log is in the store; its rows cannot be imported without doubling them");
    if (run.run_dir.empty())
        throw std::runtime_error("run " + id + " has no run folder, so no output.log to import");

    const OutputImport done = importOutput(store, run, *offset);
    std::string said = "run " + id + ": imported " + std::to_string(done.rows) + " row(s) from " + outputLogOf(run) +
                       " (bytes " + std::to_string(done.from) + " to " + std::to_string(done.to) + " of " +
                       std::to_string(done.file_bytes) + ")";
    if (done.to < done.file_bytes)
        said += "; its last " + std::to_string(done.file_bytes - done.to) + " byte(s) are an unfinished line";

    // A run whose supervisor died before it recorded the end: the output says how it ended.
    const bool unfinished = run.state == RunState::Lost || !RunState::isTerminal(run.state);
    if (unfinished && done.run_end && RunState::isTerminal(done.run_end->status)) {
        const std::string reason =
            (done.run_end->reason.empty() ? std::string() : done.run_end->reason + "; ") +
            "recorded from output.log: its supervisor ended before it wrote the run's end";
        store.finishRun(run.id, done.run_end->status, std::nullopt, reason);
        said += "; its output shows it " + done.run_end->status + " at step " + std::to_string(done.run_end->step);
    } else if (!RunState::isTerminal(run.state)) {
        store.finishRun(run.id, RunState::Lost, std::nullopt,
                        "its supervisor (pid " + std::to_string(run.supervisor_pid) + " on " + run.supervisor_host +
                            ") is no longer running and its output does not show the run's end");
    }
    if (done.rows > 0) {
        LogRow row;
        row.t = run.ended_at > 0 ? run.ended_at : fileTime(outputLogOf(run));
        row.rank = -1;
        row.host = thisHost;
        row.level = "warn";
        row.stream = "supervisor";
        row.message = said;
        store.insertLog(run.id, row);
    }
    return said;
}

} // namespace parallax
