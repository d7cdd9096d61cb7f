#pragma once

#include "trainer/train/TelemetryEmitter.h"

#include <cstdint>
#include <string>

namespace parallax {

// The Kineto profile of steps [first, last] of one rank (parallax-worker --profile-steps), written
// as a Chrome trace. A profile is a diagnostic: where it cannot be taken (a LibTorch built without
// Kineto, an unwritable path) the run goes on and its log says why.
class StepProfiler {
public:
    // `out`: the file to write (FILE-rank<R>.json when several ranks profile); empty:
    // <runDir>/profile-rank<R>.json. first < 0: off.
    StepProfiler(int64_t first, int64_t last, std::string out, std::string runDir, int rank, int worldSize,
                 bool cuda, TelemetryEmitter& log)
        : m_first(first), m_last(last), m_out(std::move(out)), m_runDir(std::move(runDir)), m_rank(rank),
          m_worldSize(worldSize), m_cuda(cuda), m_log(log) {}

    // Before step `step` is queued: starts the profile at the first step.
    void beforeStep(int64_t step);
    // Whether the profile ends after `step` (the loop drains its queued steps first).
    bool endsAfter(int64_t step) const { return m_active && step == m_last; }
    // Stops the profile and writes it.
    void finish();

private:
    int64_t m_first, m_last;
    std::string m_out, m_runDir;
    int m_rank, m_worldSize;
    bool m_cuda;
    TelemetryEmitter& m_log;
    bool m_active = false;
};

} // namespace parallax
