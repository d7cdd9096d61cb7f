#pragma once

namespace parallax {

// A request to stop gracefully: SIGUSR1 (what mpirun forwards from the supervisor), SIGTERM or SIGINT
// sent to this rank. The training loop agrees on it across ranks at a step boundary, checkpoints and
// exits as stopped.
class StopRequest {
public:
    static void installHandlers();
    static bool requested();
    static void request(); // also callable from code (a scripted stop)
};

} // namespace parallax
