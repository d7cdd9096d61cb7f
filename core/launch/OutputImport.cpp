#include "core/launch/OutputImport.h"

#include "core/launch/CheckpointScan.h"
#include "core/launch/OutputRouter.h"
#include "core/launch/ProcessTable.h"
#include "core/spec/SpecIO.h"
#include "core/store/BatchedWriter.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <vector>

namespace parallax {

namespace {

constexpr size_t kRowsPerBatch = 20000;
constexpr int64_t kPieceBytes = 1 << 20;

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

// The offset just after the last newline in [from, end) of `in` (`from` when there is none), read
// backwards a piece at a time.
int64_t afterLastNewline(std::ifstream& in, int64_t from, int64_t end) {
    std::vector<char> piece(static_cast<size_t>(std::min<int64_t>(kPieceBytes, std::max<int64_t>(end - from, 1))));
    for (int64_t stop = end; stop > from;) {
        const int64_t start = std::max(from, stop - static_cast<int64_t>(piece.size()));
        in.clear();
        in.seekg(start);
        if (!in.read(piece.data(), static_cast<std::streamsize>(stop - start))) return from;
        for (int64_t i = stop - start; i > 0; --i)
            if (piece[static_cast<size_t>(i - 1)] == '\n') return start + i;
        stop = start;
    }
    return from;
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

    // Read in pieces and cut into lines by the router, as when the run was live: a line is held up
    // to the router's limit, however long it is in the file. Only complete lines are fed: what
    // follows the last newline before `end` is an unfinished line, left for later.
    const int64_t complete = afterLastNewline(in, result.from, end);
    std::vector<char> piece(static_cast<size_t>(kPieceBytes));
    in.clear();
    in.seekg(result.from);
    for (int64_t fed = result.from; fed < complete;) {
        const size_t got = static_cast<size_t>(std::min<int64_t>(complete - fed, kPieceBytes));
        if (!in.read(piece.data(), static_cast<std::streamsize>(got))) break;
        const double now = router.lastEventTime() > 0 ? router.lastEventTime() : fallbackTime;
        // Line by line, so that the offset the writer records is always at a line's end.
        for (size_t at = 0; at < got;) {
            const void* nl = std::memchr(piece.data() + at, '\n', got - at);
            const size_t stop = nl ? static_cast<size_t>(static_cast<const char*>(nl) - piece.data()) + 1 : got;
            router.append(OutputStream::Stdout, piece.data() + at, stop - at, now);
            at = stop;
            if (!nl) continue;
            position = fed + static_cast<int64_t>(stop);
            if (writer.pendingRows() >= kRowsPerBatch) {
                result.rows += writer.pendingRows();
                writer.flush();
            }
        }
        fed += static_cast<int64_t>(got);
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

std::optional<RunState> endState(const OutputImport& done) {
    if (!done.run_end) return std::nullopt;
    const std::optional<RunState> state = runStateNamed(done.run_end->status);
    if (!state || !isTerminal(*state)) return std::nullopt;
    return state;
}

std::string recoverRunOutput(RunStore& store, int64_t runId, const std::string& thisHost) {
    const std::optional<RunRecord> found = store.run(runId);
    if (!found)
        throw std::runtime_error("no run " + std::to_string(runId) + " in " + store.path());
    const RunRecord& run = *found;
    const std::string id = std::to_string(run.id);
    if (!isTerminal(run.state) && run.supervisor_pid > 0) {
        if (run.supervisor_host != thisHost)
            throw std::runtime_error("run " + id + " is " + runStateName(run.state) + " under a supervisor on " +
                                     run.supervisor_host + " (pid " + std::to_string(run.supervisor_pid) +
                                     "); import it there once that supervisor has ended");
        if (processIsRunning(static_cast<pid_t>(run.supervisor_pid)))
            throw std::runtime_error("run " + id + " is " + runStateName(run.state) + ": its supervisor (pid " +
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

    // Its ranks may have gone on checkpointing after the supervisor was gone.
    if (const size_t found = recordCheckpointsOnDisk(store, run))
        said += "; " + std::to_string(found) + " checkpoint(s) found in its folder were recorded";

    // A run whose supervisor died before it recorded the end: the output says how it ended.
    const bool unfinished = run.state == RunState::Lost || !isTerminal(run.state);
    const std::optional<RunState> ended = endState(done);
    if (unfinished && ended) {
        const std::string reason =
            (done.run_end->reason.empty() ? std::string() : done.run_end->reason + "; ") +
            "recorded from output.log: its supervisor ended before it wrote the run's end";
        store.finishRun(run.id, *ended, std::nullopt, reason);
        said += "; its output shows it " + done.run_end->status + " at step " + std::to_string(done.run_end->step);
    } else if (!isTerminal(run.state)) {
        store.finishRun(run.id, RunState::Lost, std::nullopt,
                        "its supervisor (pid " + std::to_string(run.supervisor_pid) + " on " + run.supervisor_host +
                            ") is no longer running and its output does not show the run's end");
    }
    if (done.rows > 0) {
        LogRow row;
        row.t = run.ended_at > 0 ? run.ended_at : fileTime(outputLogOf(run));
        row.rank = -1;
        row.host = thisHost;
        row.level = LogLevel::Warn;
        row.stream = "supervisor";
        row.message = said;
        store.insertLog(run.id, row);
    }
    return said;
}

} // namespace parallax
