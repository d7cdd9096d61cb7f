#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace parallax {

// Linux /proc queries used to leave nothing of a launch behind.

// Processes (zombies included) whose session id is `sid`.
std::vector<pid_t> processesInSession(pid_t sid);
// Alive and not a zombie. kill(pid, 0) alone counts zombies as alive.
bool processIsRunning(pid_t pid);
// Running processes (zombies not) whose command line holds `text` (in one argument or across the
// NULs between them).
std::vector<pid_t> processesNaming(const std::string& text);

} // namespace parallax
