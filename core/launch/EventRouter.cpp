#include "core/launch/EventRouter.h"

namespace parallax {

EventRouter::EventRouter(HangDetector& hangs, AlertCenter& alerts) : m_hangs(hangs), m_alerts(alerts) {}

void EventRouter::onEvent(const TelemetryEvent& event, Clock::time_point now) {
    if (const auto* checkpoint = std::get_if<CheckpointEvent>(&event)) {
        m_lastCheckpoint = checkpoint->step;
    } else if (const auto* step = std::get_if<StepEvent>(&event)) {
        m_hangs.onStep(*step, now);
    } else if (const auto* comm = std::get_if<CommEvent>(&event)) {
        m_hangs.onComm(*comm, now);
    } else if (const auto* rankStep = std::get_if<RankStepEvent>(&event)) {
        m_hangs.onRankStep(*rankStep);
        m_alerts.rankStepsArrived();
    } else if (const auto* start = std::get_if<RunStartEvent>(&event)) {
        m_hangs.setWorld(start->world);
        m_hangs.setLayout(start->dp, start->tp, start->pp);
        if (m_onSlurmJob && !start->slurm_job.empty())
            m_onSlurmJob(start->slurm_job);
    }
}

} // namespace parallax
