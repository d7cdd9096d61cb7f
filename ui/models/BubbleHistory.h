#pragma once

#include "ui/models/MetricSeries.h"

#include <QString>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace parallax {

class RunStore;

// The pipeline bubble of every sampled step of one run, measured from that step's spans as the
// Pipeline page measures the step it shows (PipelineBubbles::measure: the mean over stages of
// idle / window), next to the schedule's theoretical bubble: two series in percent by step for a
// CurvePlot. Steps are measured off the GUI thread with read() and added in ascending order.
class BubbleHistory {
public:
    struct Step {
        int64_t step = 0;
        std::optional<double> overall; // fraction; none: the step's spans measure no bubble
    };

    BubbleHistory();

    // Measures the spans of `steps` of `run` (on the store's thread).
    static std::vector<Step> read(const RunStore& store, int64_t run, const std::vector<int64_t>& steps);

    void clear();
    // Steps after the last one held; others are ignored (already measured).
    void append(const std::vector<Step>& steps);
    // The steps of `sampled` (ascending) not measured yet, at most `limit` of them, oldest first.
    std::vector<int64_t> missing(const std::vector<int64_t>& sampled, size_t limit) const;

    // The reference line: (p-1)/(m+p-1) or the schedule's own; none when unknown.
    void setTheoretical(std::optional<double> fraction);
    std::optional<double> theoretical() const { return m_theoretical; }

    // The measured steps, ascending.
    const std::vector<Step>& steps() const { return m_steps; }
    // Percent by step; the theory has a point at every measured step, so it spans the same range.
    std::shared_ptr<const MetricSeries> measured() const { return m_measured; }
    std::shared_ptr<const MetricSeries> theory() const { return m_theory; }

private:
    void appendTheory(int64_t step);

    std::vector<Step> m_steps;
    int64_t m_readThrough = -1; // the last step read, measured or not
    std::optional<double> m_theoretical;
    std::shared_ptr<MetricSeries> m_measured;
    std::shared_ptr<MetricSeries> m_theory;
};

} // namespace parallax
