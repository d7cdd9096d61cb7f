#include "ui/models/BubbleHistory.h"

#include "core/store/RunStore.h"
#include "core/telemetry/PipelineBubbles.h"

#include <algorithm>
#include <stdexcept>

namespace parallax {

BubbleHistory::BubbleHistory()
    : m_measured(std::make_shared<MetricSeries>()), m_theory(std::make_shared<MetricSeries>()) {}

std::vector<BubbleHistory::Step> BubbleHistory::read(const RunStore& store, int64_t run,
                                                     const std::vector<int64_t>& steps) {
    std::vector<Step> out;
    out.reserve(steps.size());
    for (const int64_t step : steps) {
        Step s{step, std::nullopt};
        try {
            const PipelineBubbles b = PipelineBubbles::measure(store.spans(run, step));
            if (!b.empty()) s.overall = b.overall;
        } catch (const std::invalid_argument&) {
            // Spans that do not make one step: nothing measured, as the table shows nothing.
        }
        out.push_back(s);
    }
    return out;
}

void BubbleHistory::clear() {
    m_steps.clear();
    m_readThrough = -1;
    m_measured->clear();
    m_theory->clear();
}

void BubbleHistory::appendTheory(int64_t step) {
    if (m_theoretical) m_theory->append(double(step), double(step), double(step), *m_theoretical * 100.0);
}

void BubbleHistory::append(const std::vector<Step>& steps) {
    for (const Step& s : steps) {
        if (s.step <= m_readThrough) continue;
        m_readThrough = s.step;
        if (!s.overall) continue;
        m_steps.push_back(s);
        // Time and tokens are not known here; the chart is by step.
        m_measured->append(double(s.step), double(s.step), double(s.step), *s.overall * 100.0);
        appendTheory(s.step);
    }
}

std::vector<int64_t> BubbleHistory::missing(const std::vector<int64_t>& sampled, size_t limit) const {
    const auto from = std::upper_bound(sampled.begin(), sampled.end(), m_readThrough);
    const size_t n = std::min(limit, size_t(sampled.end() - from));
    return std::vector<int64_t>(from, from + std::ptrdiff_t(n));
}

void BubbleHistory::setTheoretical(std::optional<double> fraction) {
    if (fraction == m_theoretical) return;
    m_theoretical = fraction;
    m_theory->clear();
    for (const Step& s : m_steps) appendTheory(s.step);
}

} // namespace parallax
