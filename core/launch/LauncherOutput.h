#pragma once

#include "core/launch/LauncherProcess.h"
#include "core/launch/OutputRouter.h"

#include <poll.h>

#include <chrono>
#include <vector>

namespace parallax {

// The launcher's stdout and stderr handed to the OutputRouter as they come: read in bounded
// pieces (one busy pipe cannot starve the rest of the supervising loop), and drained for a while
// once the launcher has exited (ranks it left may still print).
class LauncherOutput {
public:
    LauncherOutput(LauncherProcess& launcher, OutputRouter& router) : m_launcher(launcher), m_router(router) {}

    // Adds the launcher's open pipes to `fds` (for the caller's poll); read() reads those ready.
    void addTo(std::vector<pollfd>& fds) const;
    void read(const std::vector<pollfd>& fds);
    // Reads until both pipes close or `limit` passes.
    void drain(std::chrono::milliseconds limit);

private:
    // Returns false at end of file (the pipe is closed).
    bool readPipe(int fd, OutputStream pipe);

    LauncherProcess& m_launcher;
    OutputRouter& m_router;
};

} // namespace parallax
