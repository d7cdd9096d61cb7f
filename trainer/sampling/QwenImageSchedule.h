#pragma once

#include <cstdint>
#include <vector>

namespace parallax {

// The sigmas and timesteps Qwen-Image's pipeline steps through: diffusers' FlowMatchEulerDiscreteScheduler
// as Qwen-Image configures it (dynamic shifting, exponential time shift, base_shift 0.5 at 256 tokens,
// max_shift 0.9 at 8192, shift_terminal 0.02, 1000 training timesteps), given the pipeline's sigmas
// linspace(1, 1 / steps, steps) and mu from the image's packed token count (qwenImageShiftMu).
//
// Computed in float32 step by step as the scheduler does it with NumPy 1.x: the time shift
// e^mu / (e^mu + 1 / s - 1), then the stretch that makes the last sigma 0.02, then timesteps =
// 1000 sigmas.
struct QwenImageSchedule {
    std::vector<float> sigmas;         // steps + 1: the shifted sigmas, then 0
    std::vector<float> timesteps;      // steps: 1000 x sigma, what the scheduler hands the pipeline
    std::vector<float> modelTimesteps; // steps: timestep / 1000, what the transformer is given
};

// Throws std::invalid_argument when steps < 2 (one step stretches 1 to 0.02 through 0 / 0: the
// published scheduler gives NaN) or imageTokens < 1.
QwenImageSchedule qwenImageSchedule(int64_t steps, int64_t imageTokens);

} // namespace parallax
