#pragma once

#include <string>

namespace parallax {

// <run dir>/supervisor.alive: the supervisor keeps it changing while it supervises the run
// (SupervisorHeartbeat), every rank watches it (trainer/train/SupervisorWatch) and exits once it
// stops changing or is removed. Header only: the worker builds without the launch library.
inline std::string supervisorAliveFile(const std::string& runDir) {
    if (runDir.empty() || runDir.back() == '/')
        return runDir + "supervisor.alive";
    return runDir + "/supervisor.alive";
}

} // namespace parallax
