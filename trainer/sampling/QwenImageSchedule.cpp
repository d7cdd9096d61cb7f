#include "trainer/sampling/QwenImageSchedule.h"

#include "core/spec/QwenImageModels.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace parallax {

namespace {

constexpr double kShiftTerminal = 0.02;
constexpr float kTrainTimesteps = 1000.0f;

// NumPy's linspace(start, stop, n) in float64, then cast to float32 as set_timesteps does.
std::vector<float> linspace(double start, double stop, int64_t n) {
    std::vector<float> out(static_cast<size_t>(n));
    const double step = (stop - start) / double(n - 1);
    for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i)] = static_cast<float>(double(i) * step + start);
    out.back() = static_cast<float>(stop);
    return out;
}

} // namespace

QwenImageSchedule qwenImageSchedule(int64_t steps, int64_t imageTokens) {
    if (steps < 2)
        throw std::invalid_argument("sampling steps = " + std::to_string(steps) +
                                    ": Qwen-Image's scheduler needs at least 2 (its terminal stretch divides by "
                                    "zero for one step)");
    if (imageTokens < 1)
        throw std::invalid_argument("sampling: an image of " + std::to_string(imageTokens) + " tokens");
    std::vector<float> s = linspace(1.0, 1.0 / double(steps), steps);
    // The exponential time shift with the array in float32 and e^mu a Python float cast to it.
    const float e = static_cast<float>(std::exp(qwenImageShiftMu(imageTokens)));
    for (float& v : s) v = e / (e + (1.0f / v - 1.0f));
    // stretch_shift_to_terminal: its scale is a NumPy float32 scalar over a Python float, which
    // NumPy 1.x computes in float64 and casts back to float32 where it meets the array.
    const float scale = static_cast<float>(double(1.0f - s.back()) / (1.0 - kShiftTerminal));
    QwenImageSchedule out;
    for (float v : s) {
        const float sigma = 1.0f - (1.0f - v) / scale;
        out.sigmas.push_back(sigma);
        out.timesteps.push_back(sigma * kTrainTimesteps);
        out.modelTimesteps.push_back(out.timesteps.back() / kTrainTimesteps);
    }
    out.sigmas.push_back(0.0f);
    return out;
}

} // namespace parallax
