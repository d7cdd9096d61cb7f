#pragma once

#include "trainer/comm/FlightRecorder.h"
#include "trainer/train/TelemetryEmitter.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

namespace parallax {

// A thread of the rank that emits its flight recorder's state as `comm` telemetry every `every`,
// also while the training thread is blocked inside an operation: the supervisor tells a rank that
// waits (heartbeats go on, an operation pending) from one that is silent (stopped, its host gone).
// On SIGUSR2 it writes the recorder's ring to <run dir>/flight-rank<R>.json (the supervisor asks
// for it before it ends a hung run).
class CommHeartbeat {
public:
    CommHeartbeat(std::shared_ptr<FlightRecorder> recorder, TelemetryEmitter& out, std::string runDir, std::string host,
                  std::chrono::milliseconds every = std::chrono::seconds(2));
    ~CommHeartbeat();
    CommHeartbeat(const CommHeartbeat&) = delete;
    CommHeartbeat& operator=(const CommHeartbeat&) = delete;

    // The event the thread emits (for tests).
    static CommEvent eventOf(const FlightRecorder::Snapshot& s, int rank, double now);
    // Installs the SIGUSR2 handler (once per process).
    static void installDumpHandler();
    std::string dumpPath() const;

private:
    void loop();
    void dump();

    std::shared_ptr<FlightRecorder> m_recorder;
    TelemetryEmitter& m_out;
    std::string m_runDir;
    std::string m_host;
    std::chrono::milliseconds m_every;
    std::atomic<bool> m_stop{false};
    std::thread m_thread;
};

} // namespace parallax
