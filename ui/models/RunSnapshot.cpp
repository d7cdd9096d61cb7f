#include "ui/models/RunSnapshot.h"

#include "core/spec/SpecIO.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <regex>
#include <thread>

namespace parallax {

namespace {

MetricSmoothing defaultLossSmoothing() {
    MetricSmoothing s;
    s.kind = MetricSmoothing::Kind::Ema;
    s.emaWeight = 0.9;
    return s;
}

} // namespace

RunSnapshot::RunSnapshot()
    : m_loss(std::make_shared<MetricSeries>(defaultLossSmoothing())),
      m_lr(std::make_shared<MetricSeries>()),
      m_gradNorm(std::make_shared<MetricSeries>()),
      m_tokensPerSecond(std::make_shared<MetricSeries>()),
      m_stepMs(std::make_shared<MetricSeries>()) {}

void RunSnapshot::clear() {
    m_record.reset();
    m_runStart.reset();
    m_last.reset();
    m_window.clear();
    m_firstNonFinite.reset();
    m_firstStep.reset();
    m_alerts.clear();
    for (const auto& s : {m_loss, m_lr, m_gradNorm, m_tokensPerSecond, m_stepMs}) s->clear();
}

void RunSnapshot::setAlerts(const std::vector<RunAlert>& alerts) { m_alerts = alerts; }

std::vector<RunAlert> RunSnapshot::activeAlerts() const {
    std::vector<RunAlert> active;
    for (const RunAlert& a : m_alerts)
        if (a.active) active.push_back(a);
    return active;
}

std::vector<RunAlert> RunSnapshot::clearedAlerts() const {
    std::vector<RunAlert> cleared;
    for (const RunAlert& a : m_alerts)
        if (!a.active) cleared.push_back(a);
    return cleared;
}

std::optional<int64_t> RunSnapshot::parentRun() const {
    if (!m_record || !m_record->parent_run || *m_record->parent_run <= 0) return std::nullopt;
    return m_record->parent_run;
}

std::optional<int64_t> RunSnapshot::resumedAtStep() const {
    if (!parentRun()) return std::nullopt;
    if (m_runStart && m_runStart->start_step > 0) return m_runStart->start_step;
    return m_firstStep;
}

int RunSnapshot::cpuThreadsPerRank() const {
    if (!m_record) return 1;
    static const std::regex omp("OMP_NUM_THREADS=([0-9]+)");
    std::smatch m;
    if (std::regex_search(m_record->launch_command, m, omp)) return std::max(1, std::stoi(m[1].str()));
    // The record changes with every step; its spec does not, and is parsed once.
    if (!m_threads || m_threads->first != m_record->spec_toml) {
        int64_t threads = 0;
        try {
            if (!m_record->spec_toml.empty()) threads = parseSpec(m_record->spec_toml).launch.threads_per_rank;
        } catch (const std::exception&) {
            threads = 0; // a spec this build cannot read: judge from the machine
        }
        m_threads = std::make_pair(m_record->spec_toml, static_cast<int>(threads));
    }
    if (m_threads->second > 0) return m_threads->second;
    // The ranks of the busiest host share its cores (this machine's, the one the console knows).
    std::map<std::string, int> perHost;
    if (m_runStart)
        for (const std::string& h : m_runStart->hosts) ++perHost[h];
    int ranksHere = m_record->world_size > 0 ? m_record->world_size : 1;
    if (!perHost.empty())
        ranksHere = std::max_element(perHost.begin(), perHost.end(), [](const auto& a, const auto& b) {
                        return a.second < b.second;
                    })->second;
    const int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    return std::max(1, cores / std::max(1, ranksHere));
}

void RunSnapshot::setRecord(const RunRecord& record) {
    m_record = record;
    // Wall time on the curves counts from the run's start, the same for every metric.
    if (record.started_at > 0) {
        for (const auto& s : {m_loss, m_lr, m_gradNorm, m_tokensPerSecond, m_stepMs}) {
            s->setTimeOrigin(record.started_at);
        }
    }
}

void RunSnapshot::setRunStart(const RunStartEvent& start) { m_runStart = start; }

void RunSnapshot::setLossSmoothing(const MetricSmoothing& smoothing) { m_loss->setSmoothing(smoothing); }

void RunSnapshot::addMetrics(const std::vector<StepEvent>& rows, bool reset) {
    if (reset) {
        m_last.reset();
        m_window.clear();
        m_firstNonFinite.reset();
        m_firstStep.reset();
        for (const auto& s : {m_loss, m_lr, m_gradNorm, m_tokensPerSecond, m_stepMs}) {
            s->clear();
            if (m_record && m_record->started_at > 0) s->setTimeOrigin(m_record->started_at);
            s->reserve(rows.size());
        }
    }
    for (const StepEvent& e : rows) add(e);
}

void RunSnapshot::add(const StepEvent& e) {
    if (m_last && e.step <= m_last->step) return; // already have it
    const double step = static_cast<double>(e.step);
    const double tokens = static_cast<double>(e.tokens);
    m_loss->append(step, e.t, tokens, e.loss);
    m_lr->append(step, e.t, tokens, e.lr);
    m_gradNorm->append(step, e.t, tokens, e.grad_norm);
    m_tokensPerSecond->append(step, e.t, tokens, e.tokens_per_s);
    m_stepMs->append(step, e.t, tokens, e.step_ms);
    if (!std::isfinite(e.loss) && !m_firstNonFinite) m_firstNonFinite = e.step;
    m_last = e;
    if (!m_firstStep) m_firstStep = e.step;
    m_window.add(e);
}

int64_t RunSnapshot::stepsDone() const {
    if (m_last) return m_last->step + 1;
    if (m_record && m_record->last_step >= 0) return m_record->last_step + 1;
    return 0;
}

int64_t RunSnapshot::stepsTotal() const { return m_record ? m_record->steps_total : 0; }

std::optional<double> RunSnapshot::progress() const {
    const int64_t total = stepsTotal();
    if (total <= 0) return std::nullopt;
    return std::clamp(static_cast<double>(stepsDone()) / static_cast<double>(total), 0.0, 1.0);
}

std::optional<double> RunSnapshot::stepsPerSecond() const {
    const std::optional<double> seconds = m_window.secondsPerStep();
    if (!seconds || !(*seconds > 0)) return std::nullopt;
    return 1.0 / *seconds;
}

std::optional<double> RunSnapshot::stalledFor(double now) const {
    if (!m_record || m_record->state != RunState::Running || !m_last || !(now > 0)) return std::nullopt;
    const double silent = now - m_last->t;
    const std::optional<double> perStep = m_window.secondsPerStep();
    const double limit = std::max(kStallSeconds, perStep ? kStallSteps * *perStep : 0.0);
    if (silent < limit) return std::nullopt;
    return silent;
}

std::optional<double> RunSnapshot::etaSeconds() const {
    if (!m_record || m_record->state != RunState::Running) return std::nullopt;
    const std::optional<double> rate = stepsPerSecond();
    const int64_t total = stepsTotal();
    if (!rate || total <= 0) return std::nullopt;
    return static_cast<double>(std::max<int64_t>(0, total - stepsDone())) / *rate;
}

void RunSnapshot::setStragglerThreshold(double fraction) { m_stragglerThreshold = std::max(0.0, fraction); }

std::optional<RunSnapshot::Straggler> RunSnapshot::straggler() const {
    // One slow step is noise (a checkpoint, a page fault); a rank that is slowest in most of
    // the window by a steady margin is a straggler.
    std::vector<double> spreads;
    std::map<int, int> slowest;
    for (const StepEvent& e : m_window.steps()) {
        if (!(e.step_ms_min > 0) || !std::isfinite(e.step_ms_max)) continue;
        spreads.push_back((e.step_ms_max - e.step_ms_min) / e.step_ms_min);
        ++slowest[e.slowest_rank];
    }
    // Half a window at least, so that the first steps (warm-up, compilation) alone do not judge.
    if (spreads.size() < std::max<size_t>(3, kWindowSteps / 2)) return std::nullopt;
    std::nth_element(spreads.begin(), spreads.begin() + spreads.size() / 2, spreads.end());
    const double median = spreads[spreads.size() / 2];
    if (median <= m_stragglerThreshold) return std::nullopt;
    const auto top = std::max_element(slowest.begin(), slowest.end(),
                                      [](const auto& a, const auto& b) { return a.second < b.second; });
    // Without one rank standing out the spread is spread-out noise, not a straggler.
    if (top->second * 2 <= static_cast<int>(spreads.size())) return std::nullopt;
    Straggler s;
    s.rank = top->first;
    s.spread = median;
    s.slowestSteps = top->second;
    s.windowSteps = static_cast<int>(spreads.size());
    return s;
}

} // namespace parallax
