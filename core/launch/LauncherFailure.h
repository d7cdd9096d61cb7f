#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace parallax {

// What the launcher (mpirun, srun) said about the first rank that failed.
struct LauncherFailure {
    enum class Kind {
        Signal,       // the rank was killed by a signal
        ExitCode,     // the rank exited with a non-zero code
        Abort,        // the rank called MPI_Abort
        ImproperExit, // the rank exited without MPI_Finalize while the others were still in MPI
        LaunchError,  // the launcher could not start the executable
        Unreachable,  // the launcher could not reach a host (ssh failed); `message` is what ssh said
    };
    Kind kind = Kind::ExitCode;
    int rank = -1;
    std::string host;           // empty when the message does not name it
    int64_t pid = 0;            // 0: unknown (OpenMPI prints 0 for processes it did not track)
    int signal = 0;             // Kind::Signal
    std::optional<int> exit_code; // Kind::ExitCode, Kind::Abort (the error code)
    std::string executable;     // Kind::LaunchError
    std::string message;        // Kind::Unreachable: ssh's own words

    // "rank 1 on hostA was killed by signal 9 (SIGKILL)", "rank 2 on hostA exited with code 3",
    // "node2: ssh: connect to host node2 port 22: Connection refused".
    // `fallbackHost` stands in when the message named no host (OpenMPI's exit-code message does not).
    std::string describe(const std::string& fallbackHost = "") const;
};

} // namespace parallax
