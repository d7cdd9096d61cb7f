#pragma once

#include "core/telemetry/Events.h"

#include <cstddef>
#include <deque>
#include <optional>

namespace parallax {

// A run's pace over its last steps, as medians: one fast or slow step (a checkpoint, the first
// step's warm-up, the step that ends a hang) moves neither the headline tokens/s nor the ETA, where
// the last step's figure or the time between the window's ends would.
class StepWindow {
public:
    static constexpr size_t kDefaultSteps = 20;
    explicit StepWindow(size_t steps = kDefaultSteps) : m_size(steps < 2 ? 2 : steps) {}

    // A step in order; one not after the newest is ignored.
    void add(const StepEvent& e);
    void clear() { m_steps.clear(); }
    const std::deque<StepEvent>& steps() const { return m_steps; }
    std::optional<StepEvent> last() const;

    // The median tokens/s of the window's steps, step 0 (warm-up) left out while later ones are
    // there; nullopt without a step that reports one.
    std::optional<double> tokensPerSecond() const;
    // The median time between consecutive steps' ends (wall clock, seconds); nullopt with fewer
    // than two consecutive steps.
    std::optional<double> secondsPerStep() const;

private:
    size_t m_size;
    std::deque<StepEvent> m_steps;
};

} // namespace parallax
