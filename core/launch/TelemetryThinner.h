#pragma once

#include <chrono>
#include <cstdint>
#include <set>

namespace parallax {

class BatchedWriter;
class NoticeSink;
class RunStore;

// The supervisor's side of thinning a long run's older device samples and step times in the store
// (core/store/TelemetryThinning.h): every few seconds, between the writer's flushes, a pass over
// one window of each older than the raw window ([retention] raw_telemetry_minutes), and twice a
// second while there are more, keeping raw every rank an alert of the run has named since it
// began. A failure is said once in the run's log and thinning stops: the rows stay raw, nothing
// is lost.
class TelemetryThinner {
public:
    using Clock = std::chrono::steady_clock;
    static constexpr std::chrono::seconds kPassInterval{5};
    // After a pass that thinned a window: the next one sooner, until the old windows are done.
    static constexpr std::chrono::milliseconds kCatchUpInterval{500};
    static constexpr double kDeviceWindowSeconds = 30;
    static constexpr int64_t kStepWindow = 20;

    TelemetryThinner(RunStore& store, const BatchedWriter& writer, int64_t run, double rawSeconds,
                     NoticeSink& notices);

    // `wallNow`: seconds since the epoch, the clock the samples' times are in.
    void poll(Clock::time_point now, double wallNow);

private:
    RunStore& m_store;
    const BatchedWriter& m_writer;
    int64_t m_run;
    double m_rawSeconds;
    NoticeSink& m_notices;
    std::set<int64_t> m_named;  // every rank an alert named
    Clock::time_point m_next{};
    bool m_failed = false;
};

} // namespace parallax
