#pragma once

#include "core/launch/LauncherFailure.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace parallax {

// Reads the launcher's own output lines (untagged, rank -1) and recognizes the messages that name a
// failed rank. OpenMPI 4.1 prints them as help blocks between lines of dashes, wrapped over several
// lines, so lines are collected per block and matched with the line breaks collapsed:
//   mpirun noticed that process rank 1 with PID 4242 on node hostA exited on signal 9 (Killed).
//   mpirun detected that one or more processes exited with non-zero status, ... The first process
//     to do so was: / Process name: [[63014,1],1] / Exit code: 3
//   MPI_ABORT was invoked on rank 1 in communicator MPI_COMM_WORLD / with errorcode 5.
//   mpirun has exited due to process rank 1 with PID 0 on / node hostA exiting improperly. ...
//   mpirun was unable to launch the specified application as it could not access / or execute an
//     executable: / Executable: /x / Node: hostA / while attempting to start process rank 0.
// Slurm prints one line each: "srun: error: hostA: task 1: Killed",
// "srun: error: hostA: tasks 2-3: Exited with exit code 3". The first failure recognized is kept.
class LauncherFailureParser {
public:
    void feed(std::string_view line);
    // The output ended: a block left open is matched as it is.
    void finish();
    const std::optional<LauncherFailure>& failure() const { return m_failure; }

    // Matches one message with its line breaks collapsed to single spaces.
    static std::optional<LauncherFailure> parseMessage(std::string_view text);

private:
    void closeBlock();

    bool m_inBlock = false;
    std::string m_block;
    size_t m_blockLines = 0;
    std::optional<LauncherFailure> m_failure;
};

} // namespace parallax
