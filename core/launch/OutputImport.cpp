#include "core/launch/OutputImport.h"

#include "core/launch/RawOutput.h"

#include "core/launch/CheckpointScan.h"
#include "core/launch/OutputRouter.h"
#include "core/launch/ProcessTable.h"
#include "core/spec/SpecIO.h"
#include "core/store/BatchedWriter.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace parallax {

namespace {

constexpr size_t kRowsPerBatch = 20000;
constexpr int64_t kPieceBytes = 1 << 20;
constexpr int64_t kUnfinishedHeld = 64 * kPieceBytes; // the router's own limit of a line

// The run's raw output: output.log.gz, or Slurm's (or an older run's) plain output.log.
std::string outputLogOf(const RunRecord& run) { return rawOutputPath(run.run_dir); }

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

OutputImport importOutput(RunStore& store, const RunRecord& run, int64_t from, int64_t to,
                          std::unique_ptr<RawOutputReader>* reader) {
    const std::string path = outputLogOf(run);
    std::unique_ptr<RawOutputReader> own;
    std::unique_ptr<RawOutputReader>& held = reader ? *reader : own;
    if (!held || held->position() != from || !held->error().empty()) {
        held = std::make_unique<RawOutputReader>(path); // gzip or plain; offsets are the uncompressed bytes'
        // From `from`, or from the first segment left when the older ones were removed.
        held->seek(from);
    }
    RawOutputReader& in = *held;
    OutputImport result;
    result.from = result.to = in.position();

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
    // follows the last newline before `to` is an unfinished line, left for later.
    std::vector<char> piece(static_cast<size_t>(kPieceBytes));
    std::string unfinished; // bytes after the last newline read, fed once their newline comes
    for (int64_t fed = result.from; to < 0 || fed < to;) {
        const size_t want = static_cast<size_t>(to < 0 ? kPieceBytes : std::min<int64_t>(to - fed, kPieceBytes));
        const size_t got = in.read(piece.data(), want);
        if (got == 0) break;
        const double now = router.lastEventTime() > 0 ? router.lastEventTime() : fallbackTime;
        // Line by line, so that the offset the writer records is always at a line's end.
        for (size_t at = 0; at < got;) {
            const void* nl = std::memchr(piece.data() + at, '\n', got - at);
            if (!nl) {
                unfinished.append(piece.data() + at, got - at);
                // A line of many pieces goes on to the router, which keeps its start up to its
                // limit, rather than into memory whole (only a last line that long, unfinished,
                // is then taken as if it had ended).
                if (unfinished.size() > static_cast<size_t>(kUnfinishedHeld)) {
                    router.append(OutputStream::Stdout, unfinished.data(), unfinished.size(), now);
                    unfinished.clear();
                }
                break;
            }
            const size_t stop = static_cast<size_t>(static_cast<const char*>(nl) - piece.data()) + 1;
            if (!unfinished.empty()) {
                router.append(OutputStream::Stdout, unfinished.data(), unfinished.size(), now);
                unfinished.clear();
            }
            router.append(OutputStream::Stdout, piece.data() + at, stop - at, now);
            at = stop;
            position = fed + static_cast<int64_t>(stop);
            if (writer.pendingRows() >= kRowsPerBatch) {
                result.rows += writer.pendingRows();
                writer.flush();
            }
        }
        fed += static_cast<int64_t>(got);
    }
    if (!in.error().empty()) throw std::runtime_error(in.error());
    result.file_bytes = in.position();
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
