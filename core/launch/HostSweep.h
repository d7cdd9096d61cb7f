#pragma once

#include "core/launch/CommandRun.h"

#include <chrono>
#include <string>
#include <vector>

namespace parallax {

// Ending what is left of runs on a host: the program that does it there and how to read its answer.
//
// The sweep finds every process whose command line has one of the run folders as an argument (the
// ranks get --run-dir, mpirun passes it on to its orted daemons as an MCA parameter, the host
// watch's kept ssh session names it) and Open MPI's daemon (orted, prted) that is the parent of
// one, sends them SIGTERM, then SIGKILL two seconds later to what is left, and ends with one line,
// "@px ended N", N the processes it found running. One grep reads /proc, not a process per
// process, and a process that exits while it is read is skipped, not an error. `timeout` bounds it
// there, so that a sweep whose ssh is given up here does not go on over there, and a lock there
// keeps a second sweep of the host from starting while one runs (it ends at once, saying so).
inline constexpr std::chrono::seconds kSweepLimitThere{20};
inline constexpr std::chrono::seconds kSweepLimitHere{40}; // the ssh login, the sweep, its kill wait
inline constexpr int kSweepBusyCode = 75; // another sweep holds the host's lock

// The command to run on the host (through ssh, or here), for these run folders.
std::vector<std::string> sweepCommand(const std::vector<std::string>& runDirs);

struct SweepOutcome {
    enum class Kind { Swept, NoAnswer, Failed };
    Kind kind = Kind::NoAnswer;
    int64_t ended = 0;  // processes it found running (Swept)
    std::string error;  // NoAnswer: why ssh reached nothing; Failed: what the host said
};

// What a sweep's run says: swept when its result line is there (whatever else it printed or its
// exit code); no answer when ssh did not reach the host (it did not start, timed out before any
// output, or ended with ssh's own 255); else the host answered with an error.
SweepOutcome readSweep(const CommandResult& r, std::chrono::milliseconds timeout);

} // namespace parallax
