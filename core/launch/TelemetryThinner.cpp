#include "core/launch/TelemetryThinner.h"

#include "core/launch/NoticeSink.h"
#include "core/store/BatchedWriter.h"
#include "core/store/RunStore.h"
#include "core/store/TelemetryThinning.h"

#include <exception>
#include <vector>

namespace parallax {

TelemetryThinner::TelemetryThinner(RunStore& store, const BatchedWriter& writer, int64_t run, double rawSeconds,
                                   NoticeSink& notices)
    : m_store(store), m_writer(writer), m_run(run), m_rawSeconds(rawSeconds), m_notices(notices) {}

void TelemetryThinner::poll(Clock::time_point now, double wallNow) {
    if (m_failed || m_rawSeconds <= 0 || now < m_next) return;
    // The writer's rows wait in memory, not in a transaction: a pass may come between its flushes
    // whatever it holds, but not while the store refuses rows.
    if (m_writer.failingSince()) return;
    m_next = now + kPassInterval;
    try {
        for (const RunAlert& alert : m_store.alerts(m_run)) m_named.insert(alert.ranks.begin(), alert.ranks.end());
        const std::vector<int64_t> keep(m_named.begin(), m_named.end());
        const double before = wallNow - m_rawSeconds;
        // One window of each per pass, so that a pass holds the loop briefly even at 1,024 ranks.
        const int windows = thinDeviceSamples(m_store, m_run, before, keep, {kDeviceWindowSeconds, 1}).windows +
                            thinRankSteps(m_store, m_run, before, keep, kStepWindow, 1).windows;
        if (windows > 0) m_next = now + kCatchUpInterval; // there may be more: soon again
    } catch (const std::exception& e) {
        m_failed = true;
        m_notices.notice(LogLevel::Warn, std::string("cannot thin the run's older device samples and step times in "
                                                     "the store (") +
                                             e.what() + "); they stay as they were sent");
    }
}

} // namespace parallax
