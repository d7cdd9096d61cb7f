#pragma once

#include "core/store/StoreTypes.h"
#include "core/telemetry/StepWindow.h"
#include "core/telemetry/Events.h"
#include "ui/models/MetricSeries.h"

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <vector>

namespace parallax {

// What the Live page knows about one run, built from the watcher's value snapshots: the run's
// record and run_start, one MetricSeries per plotted metric, progress and rate figures, the
// straggler verdict, the supervisor's alerts and where a resumed run comes from. No Qt widgets and no store access, so it is tested on its own.
class RunSnapshot {
public:
    // Steps over which the rate (for the ETA) and the straggler verdict are judged.
    static constexpr size_t kWindowSteps = 20;
    static constexpr double kDefaultStragglerThreshold = 0.15;

    // A rank that is the slowest in most recent steps, by a margin over the fastest.
    struct Straggler {
        int rank = 0;
        double spread = 0;    // median over the window of (step_ms_max - step_ms_min) / step_ms_min
        int slowestSteps = 0; // steps of the window in which it was the slowest
        int windowSteps = 0;
    };

    RunSnapshot();

    void clear();
    void setRecord(const RunRecord& record);
    const std::optional<RunRecord>& record() const { return m_record; }
    void setRunStart(const RunStartEvent& start);
    const std::optional<RunStartEvent>& runStart() const { return m_runStart; }
    // reset: `rows` are the run's whole history (replaces what was there).
    void addMetrics(const std::vector<StepEvent>& rows, bool reset);

    // The series are shared with the plots; they grow in place.
    std::shared_ptr<MetricSeries> loss() const { return m_loss; }
    std::shared_ptr<MetricSeries> learningRate() const { return m_lr; }
    std::shared_ptr<MetricSeries> gradNorm() const { return m_gradNorm; }
    std::shared_ptr<MetricSeries> tokensPerSecond() const { return m_tokensPerSecond; }
    std::shared_ptr<MetricSeries> stepMs() const { return m_stepMs; }
    void setLossSmoothing(const MetricSmoothing& smoothing);

    const std::optional<StepEvent>& lastStep() const { return m_last; }
    // The step reached (last recorded step + 1 steps done), and the run's planned total.
    int64_t stepsDone() const;
    int64_t stepsTotal() const;
    // Fraction 0..1 of the planned steps; nullopt when the total is unknown.
    std::optional<double> progress() const;
    // Steps per second over the recent window: the median time between consecutive steps, so that
    // a pause (a checkpoint, a hang that recovered) does not stretch the steps after it.
    std::optional<double> stepsPerSecond() const;
    // Seconds to the planned total at the recent rate; nullopt unless running with a known rate.
    std::optional<double> etaSeconds() const;
    // The median tokens/s of the recent window (StepWindow); nullopt before a step reports one.
    std::optional<double> recentTokensPerSecond() const { return m_window.tokensPerSecond(); }
    // Whether a running run has gone without a step for much longer than its steps take, at `now`
    // (seconds since the epoch): at least kStallSeconds and kStallSteps of its median step time.
    static constexpr double kStallSeconds = 10;
    static constexpr double kStallSteps = 5;
    std::optional<double> stalledFor(double now) const;
    // The first step whose loss was NaN or infinite, if any.
    std::optional<int64_t> firstNonFiniteLossStep() const { return m_firstNonFinite; }

    // The run's alerts as the store has them (RunStore::alerts); the active ones, by kind.
    void setAlerts(const std::vector<RunAlert>& alerts);
    std::vector<RunAlert> activeAlerts() const;
    // The ones the supervisor saw clear (a hang whose ranks stepped again): each kind's last word,
    // its message, with t when it cleared.
    std::vector<RunAlert> clearedAlerts() const;

    // The run this one resumes (its record's parent) and the step it continued at (run_start's
    // start_step, else its first recorded step); nullopt for a run started afresh.
    std::optional<int64_t> parentRun() const;
    std::optional<int64_t> resumedAtStep() const;

    // Threads each CPU rank computes with: OMP_NUM_THREADS of the launch command, else the spec's
    // launch.threads_per_rank, else this machine's cores shared by the ranks of a host.
    int cpuThreadsPerRank() const;

    void setStragglerThreshold(double fraction);
    double stragglerThreshold() const { return m_stragglerThreshold; }
    std::optional<Straggler> straggler() const;

private:
    void add(const StepEvent& e);

    std::optional<RunRecord> m_record;
    std::optional<RunStartEvent> m_runStart;
    std::optional<StepEvent> m_last;
    StepWindow m_window{kWindowSteps}; // the last kWindowSteps steps
    std::optional<int64_t> m_firstNonFinite;
    std::optional<int64_t> m_firstStep;
    std::vector<RunAlert> m_alerts;
    mutable std::optional<std::pair<std::string, int>> m_threads; // spec -> its launch.threads_per_rank
    double m_stragglerThreshold = kDefaultStragglerThreshold;
    std::shared_ptr<MetricSeries> m_loss, m_lr, m_gradNorm, m_tokensPerSecond, m_stepMs;
};

} // namespace parallax
