#include "core/telemetry/StepWindow.h"

#include "core/telemetry/Statistics.h"

#include <cmath>
#include <vector>

namespace parallax {

void StepWindow::add(const StepEvent& e) {
    if (!m_steps.empty() && e.step <= m_steps.back().step) return;
    m_steps.push_back(e);
    if (m_steps.size() > m_size) m_steps.pop_front();
}

std::optional<StepEvent> StepWindow::last() const {
    if (m_steps.empty()) return std::nullopt;
    return m_steps.back();
}

std::optional<double> StepWindow::tokensPerSecond() const {
    std::vector<double> rates;
    for (const StepEvent& e : m_steps)
        if (std::isfinite(e.tokens_per_s) && e.tokens_per_s > 0 && (e.step > 0 || m_steps.size() == 1))
            rates.push_back(e.tokens_per_s);
    return medianOf(std::move(rates));
}

std::optional<double> StepWindow::secondsPerStep() const {
    std::vector<double> gaps;
    for (size_t i = 1; i < m_steps.size(); ++i) {
        const StepEvent& a = m_steps[i - 1];
        const StepEvent& b = m_steps[i];
        const double dt = b.t - a.t;
        if (b.step > a.step && dt > 0) gaps.push_back(dt / static_cast<double>(b.step - a.step));
    }
    return medianOf(std::move(gaps));
}

} // namespace parallax
