#include "app/cli/ProbeRuns.h"

#include "app/cli/CliError.h"
#include "app/cli/Format.h"
#include "app/cli/ProbeDeadline.h"
#include "app/cli/WorkerLocator.h"
#include "core/launch/CommandRun.h"
#include "core/launch/ProcessTable.h"
#include "core/launch/StopSignalHandler.h"
#include "core/spec/SpecIO.h"
#include "core/store/RunStore.h"

#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <sstream>

namespace parallax {

namespace fs = std::filesystem;

namespace {

// Seconds a stopped probe's ranks get to end before SIGTERM: a probe has nothing worth a checkpoint.
constexpr const char* kProbeGrace = "5";
// Seconds a probe stopped at its time limit gets to end (the grace above, its supervisor's own
// stop) before it is killed.
constexpr double kStopAllowanceSeconds = 60;

// The last non-empty line of a process's output.
std::string lastLine(const std::string& text) {
    std::istringstream in(text);
    std::string line, last;
    while (std::getline(in, line))
        if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
    return last;
}

// What probes of a `what` killed before they could clean up left beside the store (its
// <store>.<what>-<pid>.db files and folders, for a pid no longer running): removed.
void removeLeftovers(const fs::path& store, const std::string& what) {
    const std::string prefix = store.filename().string() + "." + what + "-";
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(store.parent_path(), ec)) {
        const std::string name = entry.path().filename().string();
        if (name.rfind(prefix, 0) != 0) continue;
        const std::string rest = name.substr(prefix.size());
        const size_t digits = rest.find_first_not_of("0123456789");
        if (digits == 0 || digits == std::string::npos || rest.compare(digits, 3, ".db") != 0) continue;
        const pid_t pid = static_cast<pid_t>(std::stol(rest.substr(0, digits)));
        // Not while a probe it started still runs on its own (fit was killed, its probe was not).
        if (pid != ::getpid() && !processIsRunning(pid) &&
            processesNaming(store.string() + "." + what + "-" + std::to_string(pid)).empty())
            fs::remove_all(entry.path(), ec);
    }
}

} // namespace

void checkProbeTimeout(double seconds) {
    if (seconds > 0 && seconds <= kMostProbeTimeoutSeconds) return;
    throw CliError("--probe-timeout " + formatExact(seconds) + " must be more than 0 and at most " +
                       formatExact(kMostProbeTimeoutSeconds) + " seconds (a month): the time each probe run may take",
                   ExitCode::Usage);
}

bool ProbeRuns::Result::succeeded() const {
    return exit_code == 0 && run && run->state == RunState::Succeeded && !steps.empty();
}

std::string ProbeRuns::Result::failure(double timeoutSeconds) const {
    if (succeeded()) return {};
    if (timed_out) return "did not finish within " + formatDuration(timeoutSeconds);
    if (run && !run->exit_reason.empty()) return run->exit_reason;
    if (run && steps.empty()) return "ran without a step";
    return output_tail;
}

ProbeRuns::ProbeRuns(const std::string& storePath, std::string what, double timeoutSeconds)
    : m_what(std::move(what)), m_timeoutSeconds(timeoutSeconds) {
    checkProbeTimeout(timeoutSeconds);
    const fs::path store = fs::absolute(storePath);
    m_store = (store.parent_path() / (store.filename().string() + "." + m_what + "-" + std::to_string(::getpid()) + ".db"))
                  .string();
    m_specs = m_store + ".specs";
    removeLeftovers(store, m_what);
    // Stop requests are caught before anything exists that a stop must remove.
    if (::pipe(m_stopFds) != 0) throw CliError(m_what + ": cannot create a pipe for stop requests");
    m_stopHandler = std::make_unique<StopSignalHandler>(m_stopFds[1]);
    fs::create_directories(m_specs);
    ::chmod(m_specs.c_str(), 0700); // the specs may name secrets (launch.env)
}

ProbeRuns::~ProbeRuns() {
    m_stopHandler.reset();
    ::close(m_stopFds[0]);
    ::close(m_stopFds[1]);
    // Everything named after the probes' store: the store with its -wal, -shm or -journal (a probe
    // stopped while it created the store leaves a rollback journal), the runs' folders, the log
    // index, the spec files.
    std::error_code ec;
    const fs::path store(m_store);
    const std::string prefix = store.filename().string();
    for (const auto& entry : fs::directory_iterator(store.parent_path(), ec))
        if (entry.path().filename().string().rfind(prefix, 0) == 0) fs::remove_all(entry.path(), ec);
}

ProbeRuns::Result ProbeRuns::run(const RunSpec& spec) {
    const std::string specPath = m_specs + "/" + spec.name + ".toml";
    writeSpecFile(spec, specPath);
    // At the time limit the probe is stopped as a person stops a run; killed only when it does not
    // end after that.
    const ProbeDeadline deadline(m_stopFds[0], m_timeoutSeconds);
    const CommandResult r =
        runCommands({{selfExecutable(), "--store", m_store, "run", specPath, "--grace", kProbeGrace}},
                    std::chrono::milliseconds(static_cast<int64_t>((m_timeoutSeconds + kStopAllowanceSeconds) * 1000)),
                    {}, deadline.fd())
            .front();
    pollfd stop{m_stopFds[0], POLLIN, 0};
    if (::poll(&stop, 1, 0) > 0 && (stop.revents & POLLIN))
        throw CliError(m_what + ": stopped while probing " + spec.name + "; the probe was stopped and its files removed",
                       ExitCode::RunStopped);
    const bool timedOut = r.timed_out || (r.stopped && deadline.expired());
    if (!timedOut && (r.exit_code == ExitCode::Usage || r.exit_code == ExitCode::Error || !r.start_error.empty()))
        throw CliError(m_what + ": the probe " + spec.name + " could not start: " +
                       (r.start_error.empty() ? lastLine(r.err + "\n" + r.out) : r.start_error));
    Result out;
    out.exit_code = r.exit_code;
    out.timed_out = timedOut;
    out.seconds = r.seconds;
    out.output_tail = lastLine(r.err + "\n" + r.out);
    RunStore db(m_store);
    for (const RunRecord& candidate : db.listRuns())
        if (candidate.name == spec.name && (!out.run || candidate.id > out.run->id)) out.run = candidate;
    if (out.run) {
        out.steps = db.metrics(out.run->id);
        out.unit_times = db.events<UnitTimeEvent>(out.run->id);
        out.collective_times = db.events<CollectiveTimeEvent>(out.run->id);
    }
    return out;
}

} // namespace parallax
