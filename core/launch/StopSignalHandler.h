#pragma once

namespace parallax {

// While it lives, SIGINT, SIGTERM and SIGHUP write their number as one byte to `writeFd` (a
// self-pipe the supervisor polls) instead of ending the process; the previous handlers come back
// on destruction. One at a time per process.
class StopSignalHandler {
public:
    explicit StopSignalHandler(int writeFd);
    ~StopSignalHandler();
    StopSignalHandler(const StopSignalHandler&) = delete;
    StopSignalHandler& operator=(const StopSignalHandler&) = delete;
};

} // namespace parallax
