#include "core/launch/LauncherFailure.h"

#include "core/launch/SignalNames.h"
#include "core/launch/Ssh.h"

namespace parallax {

std::string LauncherFailure::describe(const std::string& fallbackHost) const {
    const std::string& where = host.empty() ? fallbackHost : host;
    std::string who = "rank " + std::to_string(rank);
    if (!where.empty())
        who += " on " + where;
    switch (kind) {
    case Kind::Signal:
        return who + " was killed by signal " + std::to_string(signal) + " (" + signalName(signal) + ")";
    case Kind::ExitCode:
        return who + " exited with code " + std::to_string(exit_code.value_or(-1));
    case Kind::Abort:
        return who + " called MPI_Abort with error code " + std::to_string(exit_code.value_or(-1));
    case Kind::ImproperExit:
        return who + " exited without calling MPI_Finalize while the other ranks were running";
    case Kind::LaunchError:
        return "the launcher could not start " + (executable.empty() ? std::string("the worker") : executable) +
               (where.empty() ? std::string() : " on " + where) +
               (rank >= 0 ? " (rank " + std::to_string(rank) + ")" : std::string()) +
               ": not found or not executable there";
    case Kind::Unreachable: // the host ssh names, never the fallback (the launcher's own host)
        return (host.empty() ? std::string("a host") : host) + ": " + message + "; nothing was started there (" +
               sshRemedy(message, host.empty() ? std::string("HOST") : host) + ")";
    }
    return who + " failed";
}

} // namespace parallax
