// bench_scale_launcher: a stand-in for mpirun that plays N training ranks' output, for the scale
// benchmark (bench_scale) and its test. The supervisor starts it as it would start mpirun; it
// reads the rank count from -np (or PARALLAX_SCALE_RANKS), ignores the rest of mpirun's arguments
// and the worker's, and writes on stdout what N ranks of a dp x tp x pp run (ScaleLayout.h) write
// through mpirun --tag-output at the default telemetry rates with 1 s steps:
//   - run_start (rank 0) and one plain line per rank at start;
//   - a device sample per rank every 500 ms (GPU fields, host node<rank / 8>);
//   - per step and rank a rank_step (compute and wait), every 10th step its pipeline spans, and
//     rank 0's step event;
//   - a flight recorder heartbeat (comm) per rank every 2 s;
//   - run_end (rank 0) when no rank hung.
// PARALLAX_SCALE_HANG_AT=S: from second S the silent rank (hangRank) writes nothing more, no step
// completes, and the others' heartbeats say they wait in the same all-reduce of the world group.
// PARALLAX_SCALE_STRAGGLER=1: one rank (stragglerRank) computes twice as long as the others.
// On its end (time up, SIGTERM, SIGUSR1) it writes how many lines of each kind it wrote to
// PARALLAX_SCALE_COUNTS, as "kind count" lines, with t0 (its first line's time) and the two ranks.
#include "bench/scale/ScaleLayout.h"
#include "core/spec/MeshCoord.h"
#include "core/telemetry/TelemetryCodec.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

using namespace parallax;
using namespace parallax::scale;

namespace {

volatile std::sig_atomic_t g_stop = 0;
void onStop(int) { g_stop = 1; }

double epochNow() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

struct Options {
    int ranks = 1;
    bool tagged = false;
    double seconds = 10;
    double hangAt = -1;
    bool straggler = false;
    std::string countsPath;
};

Options readOptions(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if ((a == "-np" || a == "-n" || a == "--np") && i + 1 < argc)
            o.ranks = std::max(1, std::atoi(argv[++i]));
        else if (a == "--tag-output")
            o.tagged = true;
    }
    o.ranks = static_cast<int>(envNumber(kRanksEnv, o.ranks));
    o.seconds = envNumber(kSecondsEnv, o.seconds);
    o.hangAt = envNumber(kHangAtEnv, -1);
    o.straggler = envNumber(kStragglerEnv, 0) != 0;
    if (const char* p = std::getenv(kCountsEnv)) o.countsPath = p;
    return o;
}

// The collectives a rank issues per step, per group (world: the step's scalar all-reduces).
struct GroupOps {
    const char* group;
    int64_t perStep;
    int64_t bytes;
};
constexpr GroupOps kGroups[] = {{"world", 3, 8}, {"dp", 4, 25 << 20}, {"tp", 16, 4 << 20}, {"pp", 16, 2 << 20}};

class Emitter {
public:
    explicit Emitter(Options o) : m_o(std::move(o)), m_layout(layoutFor(m_o.ranks)) {
        m_hangRank = m_o.hangAt >= 0 ? hangRank(m_o.ranks) : -1;
        m_stragglerRank = m_o.straggler ? stragglerRank(m_o.ranks) : -1;
        m_nextDevice.resize(m_o.ranks);
        m_nextComm.resize(m_o.ranks);
        for (int r = 0; r < m_o.ranks; ++r) { // spread over the period, as independent ranks are
            m_nextDevice[r] = kDeviceEvery * r / m_o.ranks;
            m_nextComm[r] = kCommEvery * r / m_o.ranks;
        }
    }

    void run();
    void writeCounts() const;

private:
    double rel() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - m_start).count(); }
    bool hung(double rel) const { return m_o.hangAt >= 0 && rel >= m_o.hangAt; }
    bool silent(int rank, double rel) const { return rank == m_hangRank && hung(rel); }
    void line(int rank, const TelemetryEvent& e, const char* kind);
    void text(int rank, const std::string& message);
    void flush();
    void start();
    void step(int64_t s, double stepStart);
    void spans(int rank, int64_t s, double from, double to);
    CommEvent heartbeat(int rank, double rel) const;

    Options m_o;
    Layout m_layout;
    int m_hangRank = -1;
    int m_stragglerRank = -1;
    std::chrono::steady_clock::time_point m_start;
    double m_t0 = 0;
    std::vector<double> m_nextDevice, m_nextComm;
    int64_t m_stepsDone = 0;
    std::string m_buffer;
    std::map<std::string, int64_t> m_counts;
};

void Emitter::line(int rank, const TelemetryEvent& e, const char* kind) {
    if (m_o.tagged) m_buffer += "[1," + std::to_string(rank) + "]<stdout>:";
    appendEvent(m_buffer, e);
    m_buffer.push_back('\n');
    ++m_counts[kind];
}

void Emitter::text(int rank, const std::string& message) {
    if (m_o.tagged) m_buffer += "[1," + std::to_string(rank) + "]<stdout>:";
    m_buffer += message;
    m_buffer.push_back('\n');
    ++m_counts["text"];
}

void Emitter::flush() {
    size_t done = 0;
    while (done < m_buffer.size()) {
        const ssize_t n = ::write(STDOUT_FILENO, m_buffer.data() + done, m_buffer.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break; // the supervisor is gone
        done += static_cast<size_t>(n);
    }
    m_buffer.clear();
}

void Emitter::start() {
    RunStartEvent e;
    e.world = m_o.ranks;
    e.dp = m_layout.dp;
    e.tp = m_layout.tp;
    e.pp = m_layout.pp;
    e.schedule = "1f1b";
    e.params = 7'000'000'000;
    e.flops_per_token = 4.2e10;
    e.peak_flops = 9.89e14;
    e.device = "cuda";
    for (int r = 0; r < m_o.ranks; ++r) {
        e.hosts.push_back(hostOf(r));
        e.devices.push_back("NVIDIA H100 80GB HBM3 #" + std::to_string(r % kRanksPerHost));
        e.clock_offsets.push_back(0.0);
    }
    e.t = m_t0;
    line(0, e, "run_start");
    for (int r = 0; r < m_o.ranks; ++r) {
        const MeshCoord c = meshCoord(r, m_layout.dp, m_layout.tp, m_layout.pp);
        text(r, "rank " + std::to_string(r) + " on " + hostOf(r) + ": dp " + std::to_string(c.dp) + ", tp " +
                    std::to_string(c.tp) + ", stage " + std::to_string(c.pp) + " of " + std::to_string(m_layout.pp));
    }
}

// One pipeline step's spans of a rank, as the 1F1B engine reports them: per micro-batch a receive
// (not on the first stage), the forward, a receive of the gradient (not on the last stage), the
// backward; one send at the end.
void Emitter::spans(int rank, int64_t s, double from, double to) {
    if (m_layout.pp < 2) return;
    const MeshCoord c = meshCoord(rank, m_layout.dp, m_layout.tp, m_layout.pp);
    std::vector<std::pair<const char*, int>> parts;
    for (int m = 0; m < kMicrobatches; ++m) {
        if (c.pp > 0) parts.push_back({"recv", m});
        parts.push_back({"F", m});
    }
    for (int m = 0; m < kMicrobatches; ++m) {
        if (c.pp + 1 < m_layout.pp) parts.push_back({"recv", m});
        parts.push_back({"B", m});
    }
    parts.push_back({"send", -1});
    const double slot = (to - from) / static_cast<double>(parts.size());
    for (size_t i = 0; i < parts.size(); ++i) {
        SpanEvent e;
        e.rank = rank;
        e.stage = c.pp;
        e.step = s;
        e.microbatch = parts[i].second;
        e.kind = parts[i].first;
        e.start = from + slot * static_cast<double>(i);
        e.end = e.start + slot * 0.9;
        line(rank, e, "span");
    }
}

void Emitter::step(int64_t s, double stepStart) {
    const double stepEnd = epochNow();
    for (int r = 0; r < m_o.ranks; ++r) {
        if (silent(r, rel())) continue;
        RankStepEvent e;
        e.rank = r;
        e.step = s;
        const double jitter = 10.0 * std::sin(0.7 * static_cast<double>(r) + static_cast<double>(s));
        e.compute_ms = (r == m_stragglerRank ? 900.0 : 450.0) + jitter;
        e.wait_ms = std::max(0.0, 1000.0 * kStepSeconds - e.compute_ms - 50.0);
        e.t = stepEnd;
        line(r, e, "rank_step");
        if (s % kSpanEvery == 0) spans(r, s, stepStart, stepEnd);
    }
    StepEvent e;
    e.step = s;
    e.loss = 2.0 + 8.0 * std::exp(-static_cast<double>(s) / 50.0);
    e.lr = 3e-4;
    e.grad_norm = 1.0;
    e.step_ms = 1000.0 * kStepSeconds;
    e.step_ms_min = e.step_ms - 2;
    e.step_ms_max = e.step_ms + 2;
    e.slowest_rank = std::max(0, m_stragglerRank);
    e.samples_per_s = 256.0;
    e.tokens_per_s = 256.0 * 4096.0;
    e.tokens = (s + 1) * 256 * 4096;
    e.mfu = 0.41;
    e.peak_mem = 6.1e10;
    e.t = epochNow();
    line(0, e, "step");
    m_stepsDone = s + 1;
}

// What the flight recorder says: between operations while the run trains; in the world group's
// all-reduce of the step that does not complete once a rank has hung.
CommEvent Emitter::heartbeat(int rank, double rel) const {
    CommEvent e;
    const bool waiting = hung(rel);
    for (const GroupOps& g : kGroups) {
        const int64_t done = g.perStep * m_stepsDone;
        e.groups.push_back(g.group);
        const bool world = std::strcmp(g.group, "world") == 0;
        e.enqueued.push_back(done + (waiting && world ? 1 : 0));
        e.completed.push_back(done);
        e.collectives += done;
        e.bytes += done * g.bytes;
        if (world) e.last_seq = done;
    }
    e.rank = rank;
    if (waiting) {
        e.pending_op = "all_reduce";
        e.pending_group = "world";
        e.pending_seq = e.last_seq + 1;
        e.pending_bytes = 8;
        e.pending_s = rel - m_o.hangAt;
    }
    e.t = epochNow();
    return e;
}

void Emitter::run() {
    m_start = std::chrono::steady_clock::now();
    m_t0 = epochNow();
    start();
    flush();
    double stepStart = m_t0;
    for (;;) {
        const double now = rel();
        if (now >= m_o.seconds || g_stop) break;
        for (int r = 0; r < m_o.ranks; ++r) {
            const bool quiet = silent(r, now);
            if (m_nextDevice[r] <= now) {
                m_nextDevice[r] += kDeviceEvery;
                if (!quiet) {
                    DeviceEvent d;
                    d.rank = r;
                    d.host = hostOf(r);
                    d.device = r % kRanksPerHost;
                    d.util = hung(now) ? 0.0 : 93.0;
                    d.mem_used = 6.0e10 + 1e6 * r;
                    d.mem_total = 8.5e10;
                    d.power_w = 610;
                    d.temp_c = 64;
                    d.sm_clock_mhz = 1980;
                    d.cpu_pct = 101.5;
                    d.rss = 9.2e9;
                    d.t = epochNow();
                    line(r, d, "device");
                }
            }
            if (m_nextComm[r] <= now) {
                m_nextComm[r] += kCommEvery;
                if (!quiet) line(r, heartbeat(r, now), "comm");
            }
        }
        // Step s ends at (s + 1) s; none ends once a rank has hung.
        if (now >= kStepSeconds * static_cast<double>(m_stepsDone + 1) && !hung(now)) {
            step(m_stepsDone, stepStart);
            stepStart = epochNow();
        }
        flush();
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (!hung(rel())) {
        RunEndEvent e;
        e.status = "succeeded";
        e.step = m_stepsDone;
        e.t = epochNow();
        line(0, e, "run_end");
    }
    flush();
}

void Emitter::writeCounts() const {
    if (m_o.countsPath.empty()) return;
    const std::string tmp = m_o.countsPath + ".tmp";
    {
        std::ofstream out(tmp);
        out.precision(17);
        for (const auto& [kind, n] : m_counts) out << kind << " " << n << "\n";
        out << "t0 " << m_t0 << "\nhang_rank " << m_hangRank << "\nstraggler_rank " << m_stragglerRank << "\n";
    }
    std::rename(tmp.c_str(), m_o.countsPath.c_str());
}

} // namespace

int main(int argc, char** argv) {
    std::signal(SIGTERM, onStop);
    std::signal(SIGUSR1, onStop);
    std::signal(SIGINT, onStop);
    std::signal(SIGPIPE, SIG_IGN);
    Emitter emitter(readOptions(argc, argv));
    emitter.run();
    emitter.writeCounts();
    return 0;
}
