#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace parallax {

struct CommandResult {
    int exit_code = -1;     // 128 + signal when killed; -1 when it did not start or timed out
    bool timed_out = false;
    std::string out;
    std::string err;
    std::string start_error; // why it did not start (e.g. "ssh: No such file or directory")
    double seconds = 0;
    bool stopped = false;    // it got SIGTERM because `stopFd` became readable
};

// Runs every command at once, each in a session of its own (stdin /dev/null), and waits for all of
// them, at most `timeout` each: one that is still running then is killed with everything it
// started. For the short ssh commands of preflight and cleanup, where a host that does not answer
// must cost its timeout once, not once per host. When `stopFd` (a pipe's read end; -1: none) becomes
// readable, every command still running gets SIGTERM once and is waited for as before.
std::vector<CommandResult> runCommands(const std::vector<std::vector<std::string>>& commands,
                                       std::chrono::milliseconds timeout,
                                       const std::map<std::string, std::string>& env = {}, int stopFd = -1);

} // namespace parallax
