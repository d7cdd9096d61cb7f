#include "trainer/train/CommHeartbeat.h"

#include "core/util/Files.h"

#include <csignal>

namespace parallax {

namespace {

volatile std::sig_atomic_t g_dumpRequested = 0;
void onDumpSignal(int) { g_dumpRequested = 1; }

} // namespace

void CommHeartbeat::installDumpHandler() {
    struct sigaction sa {};
    sa.sa_handler = onDumpSignal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGUSR2, &sa, nullptr);
}

CommHeartbeat::CommHeartbeat(std::shared_ptr<FlightRecorder> recorder, TelemetryEmitter& out, std::string runDir,
                             std::string host, std::chrono::milliseconds every)
    : m_recorder(std::move(recorder)), m_out(out), m_runDir(std::move(runDir)), m_host(std::move(host)),
      m_every(every) {
    installDumpHandler();
    m_thread = std::thread([this] { loop(); });
}

CommHeartbeat::~CommHeartbeat() {
    m_stop = true;
    if (m_thread.joinable()) m_thread.join();
}

CommEvent CommHeartbeat::eventOf(const FlightRecorder::Snapshot& s, int rank, double now) {
    CommEvent e;
    e.rank = rank;
    e.collectives = s.operations;
    e.bytes = s.bytes;
    for (const FlightRecorder::GroupState& g : s.groups) {
        e.groups.push_back(g.group);
        e.enqueued.push_back(g.enqueued);
        e.completed.push_back(g.completed);
        if (g.group == "world") e.last_seq = g.completed;
    }
    if (!s.pending.op.empty()) {
        e.pending_op = s.pending.op;
        e.pending_group = s.pending.group;
        e.pending_seq = s.pending.seq;
        e.pending_bytes = s.pending.bytes;
        e.pending_s = std::max(0.0, now - s.pending.enqueued);
    }
    e.t = now;
    return e;
}

std::string CommHeartbeat::dumpPath() const {
    return joinPath(m_runDir, "flight-rank" + std::to_string(m_out.rank()) + ".json");
}

void CommHeartbeat::dump() {
    try {
        writeFileAtomic(dumpPath(), m_recorder->dumpJson(m_out.rank(), m_host));
        m_out.info("flight recorder of rank " + std::to_string(m_out.rank()) + " written to " + dumpPath());
    } catch (const std::exception& e) {
        m_out.warn(std::string("cannot write the flight recorder: ") + e.what());
    }
}

void CommHeartbeat::loop() {
    auto next = std::chrono::steady_clock::now();
    while (!m_stop) {
        if (g_dumpRequested) {
            g_dumpRequested = 0;
            dump();
        }
        m_recorder->pollCompletions(); // operations that complete on the device (NCCL)
        if (std::chrono::steady_clock::now() >= next) {
            m_out.emit(eventOf(m_recorder->snapshot(), m_out.rank(), TelemetryEmitter::now()));
            next += m_every;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
}

} // namespace parallax
