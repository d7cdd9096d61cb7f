#include "app/cli/CliError.h"
#include "app/cli/Commands.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <iostream>
#include <thread>

namespace parallax {

int stopCommand(const std::string& storePath, const std::string& run, bool wait) {
    RunStore store(storePath);
    const RunRecord r = requireRun(store, run);
    if (isTerminal(r.state)) {
        std::cout << "run " << r.id << " has already ended (" << r.state << ")" << std::endl;
        return ExitCode::Ok;
    }
    const std::string host = thisHost();
    if (!r.supervisor_host.empty() && r.supervisor_host != host)
        throw CliError("run " + std::to_string(r.id) + " is supervised on " + r.supervisor_host + " (pid " +
                       std::to_string(r.supervisor_pid) + "); run parallax-cli stop " + std::to_string(r.id) +
                       " there");
    if (!pidAlive(r.supervisor_pid)) {
        if (const std::optional<SlurmJob> job = store.slurmJob(r.id); job && job->mode == SlurmMode::Batch) {
            // The job goes on without its supervisor: followed again here, it is asked to stop.
            std::cout << "run " << r.id << ": nobody follows Slurm job " << job->job_id
                      << "; following it here to stop it (USR1: the ranks checkpoint)" << std::endl;
            RunCommandOptions o;
            o.run = std::to_string(r.id);
            o.attach = true;
            o.stop_first = true;
            return runCommand(storePath, o);
        }
        const std::string reason =
            r.supervisor_pid > 0 ? "its supervisor (pid " + std::to_string(r.supervisor_pid) + " on " + host + ") is gone"
                                 : "it never got a supervisor";
        store.finishRun(r.id, RunState::Lost, std::nullopt, reason);
        std::cout << "run " << r.id << " marked lost: " << reason << std::endl;
        return ExitCode::Ok;
    }
    if (kill(static_cast<pid_t>(r.supervisor_pid), SIGTERM) != 0)
        throw CliError("cannot signal supervisor pid " + std::to_string(r.supervisor_pid) + " of run " +
                       std::to_string(r.id) + ": " + std::strerror(errno));
    std::cout << "sent SIGTERM to supervisor pid " << r.supervisor_pid << " of run " << r.id
              << ": the ranks checkpoint and stop" << std::endl;
    if (!wait)
        return ExitCode::Ok;
    for (;;) {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        const std::optional<RunRecord> now = store.run(r.id);
        if (!now)
            throw CliError("run " + std::to_string(r.id) + " disappeared from " + store.path());
        if (isTerminal(now->state)) {
            std::cout << "run " << now->id << " " << now->state
                      << (now->exit_reason.empty() ? "" : ": " + now->exit_reason) << std::endl;
            return exitCodeForState(now->state);
        }
        if (!pidAlive(r.supervisor_pid)) {
            store.markLostRuns(host, pidAlive);
        }
    }
}

} // namespace parallax
