#pragma once

namespace parallax {

// How far a stop of a run's launch has gone: none asked; the ranks asked to checkpoint and stop
// (SIGUSR1); the launcher terminated (SIGTERM, a batch job cancelled); everything killed.
enum class StopPhase { None, Graceful, Terminate, Kill };

} // namespace parallax
