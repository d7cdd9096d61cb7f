#include "app/cli/CliError.h"
#include "app/cli/Commands.h"
#include "core/launch/ProcessTable.h"
#include "core/util/HostName.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <iostream>

namespace parallax {

RunRecord requireRun(const RunStore& store, const std::string& idOrName) {
    if (std::optional<RunRecord> r = store.findRun(idOrName))
        return *r;
    const bool numeric = !idOrName.empty() && idOrName.find_first_not_of("0123456789") == std::string::npos;
    throw CliError(std::string(numeric ? "no run with id " + idOrName : "no run named '" + idOrName + "'") +
                   " in " + store.path() + "; see parallax-cli ls");
}

std::string thisHost() { return hostName(); }

bool pidAlive(int64_t pid) { return processIsRunning(static_cast<pid_t>(pid)); }

void markLostRunsIfWritable(RunStore& store) {
    try {
        store.markLostRuns(thisHost(), pidAlive);
        // A Slurm batch job goes on without its supervisor: one is started to follow it again.
        for (const int64_t id : store.unfollowedBatchRuns(thisHost(), pidAlive)) {
            std::cerr << "parallax: nobody follows the Slurm batch job of run " << id
                      << "; following it again in the background (parallax-cli attach " << id << ")" << std::endl;
            startBackgroundAttach(store.path(), id);
        }
    } catch (const StoreError&) {
    }
}

int exitCodeForState(RunState state) {
    if (state == RunState::Succeeded)
        return ExitCode::Ok;
    if (state == RunState::Stopped)
        return ExitCode::RunStopped;
    return ExitCode::RunFailed;
}

void detachIntoOwnSession() {
    setsid();
    const int devnull = ::open("/dev/null", O_RDWR);
    if (devnull >= 0) {
        dup2(devnull, 0);
        dup2(devnull, 1);
        dup2(devnull, 2);
    }
}

} // namespace parallax
