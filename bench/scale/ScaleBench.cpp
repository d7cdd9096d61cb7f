// What the supervisor costs as the ranks grow: the real supervisor (core/launch/Supervisor, as
// `parallax-cli run` runs it) in a process of its own, with bench_scale_launcher as its mpirun,
// which writes what N ranks of a dp x tp x pp run write at the default telemetry rates with 1 s
// steps (ScaleLauncher.cpp). One row per rank count:
//   - the supervisor's cores (its CPU seconds over wall seconds, /proc/PID/stat) and peak RSS
//     (VmHWM), while every rank trains;
//   - line-to-store latency of the device samples: the time this process first sees a row in the
//     store (polled every 50 ms; the midpoint between the poll that found it and the one before)
//     minus the time the launcher stamped on the line (its field t, kept by the store);
//   - store growth (the database's pages in use, SQLite's page_count - freelist_count, plus the
//     log index file) and output.log.gz growth (with the segments after it) in GB per hour while
//     every rank trains;
//   - with --hang-at S: seconds from S until the store holds the hang alert, and its message's
//     length in characters; with --straggler: seconds from the first line until the store holds
//     the straggler alert (each must name the launcher's silent or slow rank);
//   - every line the launcher wrote, per kind, against the rows stored (thinned rows counted for
//     the lines they stand for, StoredTelemetry.h): a difference is printed and the benchmark
//     exits 1.
// With --raw-minutes M (the spec's retention.raw_telemetry_minutes, else its default) a second
// table: the store's growth over the first minute (5 to 65 s, every row raw) and once thinning
// keeps up (from 30 s after the raw window ends, over whole minutes: the device windows of 30 s
// and the rank-step windows of 20 steps are then thinned in the same phase at both ends), the
// seconds of device samples and rank steps still raw at that window's start and end (the raw window
// plus how far thinning lags behind it), and the rows of device samples and rank steps against what
// they stand for.
//
//   bench_scale [--ranks N[,N...]] [--seconds S] [--hang-at S] [--straggler] [--raw-minutes M] [--keep]
//   (defaults: --ranks 64 --seconds 20; the window measured runs from 5 s to the hang, or to 1 s
//   before the end)

#include "bench/scale/ScaleLayout.h"
#include "bench/scale/ScaleRun.h"
#include "bench/scale/StoredTelemetry.h"

#include <fcntl.h>
#include <spawn.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>


using namespace parallax;
using namespace parallax::scale;
namespace fs = std::filesystem;

namespace {

constexpr double kPollSeconds = 0.05;
constexpr double kWindowFrom = 5.0; // seconds after the first line: run_start and start-up are done

double epochNow() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

struct Options {
    std::vector<int> ranks;
    double seconds = 20;
    double hangAt = -1;
    bool straggler = false;
    int64_t rawMinutes = 0; // 0: the spec's default
    bool keep = false;
};

[[noreturn]] void usage(const std::string& problem) {
    std::cerr << "bench_scale: " << problem
              << "\nusage: bench_scale [--ranks N[,N...]] [--seconds S] [--hang-at S] [--straggler] "
                 "[--raw-minutes M] [--keep]\n";
    std::exit(2);
}

Options readOptions(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) usage(a + " needs a value");
            return argv[++i];
        };
        if (a == "--ranks") {
            std::stringstream list(value());
            for (std::string n; std::getline(list, n, ',');)
                if (std::atoi(n.c_str()) > 0) o.ranks.push_back(std::atoi(n.c_str()));
                else usage("--ranks takes positive counts, e.g. 64,256,1024");
        } else if (a == "--seconds") o.seconds = std::atof(value().c_str());
        else if (a == "--hang-at") o.hangAt = std::atof(value().c_str());
        else if (a == "--straggler") o.straggler = true;
        else if (a == "--raw-minutes") {
            o.rawMinutes = std::atoll(value().c_str());
            if (o.rawMinutes < 1) usage("--raw-minutes takes whole minutes, at least 1");
        }
        else if (a == "--keep") o.keep = true;
        else usage("unknown argument " + a);
    }
    if (o.ranks.empty()) o.ranks = {64};
    if (o.seconds < kWindowFrom + 2) usage("--seconds must be at least " + std::to_string(int(kWindowFrom) + 2));
    if (o.hangAt >= 0 && (o.hangAt <= kWindowFrom + 1 || o.hangAt >= o.seconds))
        usage("--hang-at must lie between " + std::to_string(int(kWindowFrom) + 1) + " and --seconds");
    return o;
}

// The supervisor's process as /proc tells it.
struct ProcSample {
    double cpuSeconds = 0; // user + system, its own (not its children's)
    double hwmBytes = 0;   // VmHWM
};

std::optional<ProcSample> readProc(pid_t pid) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const size_t close = text.rfind(')');
    if (close == std::string::npos) return std::nullopt;
    std::istringstream fields(text.substr(close + 2));
    std::vector<std::string> f;
    for (std::string w; fields >> w;) f.push_back(w);
    if (f.size() < 13) return std::nullopt;
    ProcSample s;
    const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
    s.cpuSeconds = (std::atof(f[11].c_str()) + std::atof(f[12].c_str())) / tick; // utime, stime
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    for (std::string line; std::getline(status, line);)
        if (line.rfind("VmHWM:", 0) == 0) s.hwmBytes = std::atof(line.substr(6).c_str()) * 1024.0;
    return s;
}

// Bytes the store holds: its pages in use (the WAL's newest included), plus the log index file.
double storeBytes(const std::string& path) {
    sqlite3* db = nullptr;
    double bytes = 0;
    if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
        sqlite3_busy_timeout(db, 2000);
        auto pragma = [&](const char* sql) {
            sqlite3_stmt* s = nullptr;
            double v = 0;
            if (sqlite3_prepare_v2(db, sql, -1, &s, nullptr) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
                v = sqlite3_column_double(s, 0);
            sqlite3_finalize(s);
            return v;
        };
        bytes = (pragma("PRAGMA page_count") - pragma("PRAGMA freelist_count")) * pragma("PRAGMA page_size");
    }
    sqlite3_close(db);
    std::error_code ec;
    const auto index = fs::file_size(path + ".logindex", ec);
    return bytes + (ec ? 0.0 : static_cast<double>(index));
}

// The run's raw output: output.log.gz and the segments after it (output.N.log.gz).
double outputBytes(const std::string& runDir) {
    double bytes = 0;
    std::error_code ec;
    for (const fs::directory_entry& e : fs::directory_iterator(runDir, ec)) {
        const std::string name = e.path().filename().string();
        std::error_code sizeError;
        const auto n = e.file_size(sizeError);
        if (name.rfind("output", 0) == 0 && name.size() > 3 && name.compare(name.size() - 3, 3, ".gz") == 0 && !sizeError)
            bytes += static_cast<double>(n);
    }
    return bytes;
}

double percentile(std::vector<double> v, double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[static_cast<size_t>(p * static_cast<double>(v.size() - 1))];
}

pid_t startSupervisor(const std::string& store, int ranks, const Options& o, const std::string& log) {
    return spawnSelf({"--supervise", store, std::to_string(ranks), std::to_string(o.seconds), std::to_string(o.rawMinutes)},
                     log, "bench_scale");
}

// Store growth over a stretch of the run, and how far behind the raw window the thinning was at both ends.
struct ThinnedGrowth {
    double storeGBh = 0;
    double rawDeviceFrom = 0, rawDeviceTo = 0, rawStepsFrom = 0, rawStepsTo = 0;
};

// What one rank count measured.
struct Row {
    int ranks = 0;
    Layout layout;
    double linesPerSecond = 0;
    double cores = 0;
    double rssMiB = 0;
    std::vector<double> latencyMs;
    double storeGBh = 0, logGBh = 0;
    std::optional<ThinnedGrowth> rawGrowth, thinnedGrowth; // --raw-minutes: first minute, once thinned
    StoredTelemetry telemetry;
    std::optional<double> hangNamedS, stragglerNamedS;
    size_t hangChars = 0;
    std::string hangMessage, stragglerMessage; // as first seen in the store
    std::vector<std::string> problems;
};

// One size and CPU reading in the window.
struct Mark {
    double t = 0;   // epoch
    double rel = 0; // seconds after the first line
    double cpu = 0, store = 0, log = 0;
    // Seconds of device samples and steps still raw: back to the store's thinning marks
    // (RunStore::thinnedUntil; steps are 1 s), or to the first line before any thinning.
    double rawDeviceS = 0, rawStepsS = 0;
};

// The store's growth in GB per hour between the first readings at or after `from` and `to`
// (seconds after the first line); none when the readings do not reach `to`.
std::optional<ThinnedGrowth> storeGrowth(const std::vector<Mark>& marks, double from, double to) {
    auto at = [&](double rel) {
        return std::find_if(marks.begin(), marks.end(), [&](const Mark& m) { return m.rel >= rel; });
    };
    const auto a = at(from), b = at(to);
    if (a == marks.end() || b == marks.end() || b->t <= a->t) return std::nullopt;
    return ThinnedGrowth{(b->store - a->store) * 3600.0 / (b->t - a->t) / 1e9, a->rawDeviceS, b->rawDeviceS,
                         a->rawStepsS, b->rawStepsS};
}

// Where the growth once thinning keeps up is measured from: 30 s after the raw window, by when
// each 30 s window of device samples and each 20-step window of rank steps is thinned within a
// pass or two (5 s apart) of leaving the raw window.
constexpr double kThinnedAfter = 30.0;

// Watches a running scale run until its supervisor exits: latency, alerts, sizes, CPU and RSS.
class Watch {
public:
    Watch(const Options& o, Row& row, std::string store, pid_t pid)
        : m_o(o), m_row(row), m_storePath(std::move(store)), m_pid(pid) {}

    void run() {
        int status = 0;
        double lastPoll = epochNow();
        while (waitpid(m_pid, &status, WNOHANG) == 0) {
            std::this_thread::sleep_for(std::chrono::duration<double>(kPollSeconds));
            const double now = epochNow();
            // An exited process (a zombie until reaped) has no memory figures left: keep the last.
            if (const std::optional<ProcSample> p = readProc(m_pid); p && p->hwmBytes > 0) {
                m_proc = *p;
                m_row.rssMiB = p->hwmBytes / (1024.0 * 1024.0);
            }
            try {
                poll(lastPoll, now);
            } catch (const std::exception&) {
                // The store is being created: the next poll reads it.
            }
            lastPoll = now;
        }
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            m_row.problems.push_back("the supervisor's process ended with status " + std::to_string(status));
        finish();
    }

    struct Seen {
        double at = 0; // when this process first saw the alert in the store
        RunAlert alert;
    };
    int64_t runId() const { return m_run; }
    const std::optional<Seen>& hang() const { return m_hang; }
    const std::optional<Seen>& straggler() const { return m_straggler; }

private:
    void poll(double before, double now) {
        if (!m_store) {
            if (!fs::exists(m_storePath)) return;
            m_store = std::make_unique<RunStore>(m_storePath);
        }
        if (m_run == 0) {
            const std::optional<RunRecord> r = m_store->findRun("scale-" + std::to_string(m_row.ranks));
            if (!r) return;
            m_run = r->id;
            m_runDir = r->run_dir;
        }
        if (m_t0 == 0) {
            const std::optional<RunStartEvent> start = m_store->runStart(m_run);
            if (!start) return;
            m_t0 = start->t;
            m_lastDeviceT = m_t0 - 1;
        }
        const double mid = 0.5 * (before + now);
        for (const DeviceEvent& d : m_store->deviceSamples(m_run, m_lastDeviceT)) {
            m_row.latencyMs.push_back(1000.0 * (mid - d.t));
            m_lastDeviceT = std::max(m_lastDeviceT, d.t);
        }
        for (const RunAlert& a : m_store->alerts(m_run)) {
            if (a.kind == AlertKind::Hang && !m_hang) m_hang = Seen{now, a};
            if (a.kind == AlertKind::Straggler && !m_straggler) m_straggler = Seen{now, a};
        }
        mark(now);
    }

    void mark(double now) {
        const double rel = now - m_t0;
        const double end = m_o.hangAt >= 0 ? m_o.hangAt : m_o.seconds - 1;
        if (rel < kWindowFrom || rel > end || (m_last && now - m_last->t < 1.0)) return;
        Mark m{now, rel, m_proc.cpuSeconds, storeBytes(m_storePath), outputBytes(m_runDir)};
        if (m_o.rawMinutes > 0) {
            const std::optional<double> device = m_store->thinnedUntil(m_run, "device");
            const std::optional<double> steps = m_store->thinnedUntil(m_run, "rank_step");
            m.rawDeviceS = device ? now - *device : rel;
            m.rawStepsS = steps ? rel - *steps * kStepSeconds : rel;
        }
        if (!m_first) m_first = m;
        m_last = m;
        m_marks.push_back(m);
    }

    // --raw-minutes: the growth over 5 to 65 s, and over the whole minutes from kThinnedAfter s
    // past the raw window to the window's end.
    void thinnedGrowth() {
        if (m_o.rawMinutes <= 0 || m_marks.empty()) return;
        m_row.rawGrowth = storeGrowth(m_marks, kWindowFrom, kWindowFrom + 60);
        const double from = 60.0 * double(m_o.rawMinutes) + kThinnedAfter;
        const double minutes = std::floor((m_marks.back().rel - from) / 60.0);
        if (minutes >= 1) m_row.thinnedGrowth = storeGrowth(m_marks, from, from + 60.0 * minutes);
    }

    void finish() {
        if (m_first && m_last && m_last->t > m_first->t) {
            const double wall = m_last->t - m_first->t;
            const double perHour = 3600.0 / wall / 1e9;
            m_row.cores = (m_last->cpu - m_first->cpu) / wall;
            m_row.storeGBh = (m_last->store - m_first->store) * perHour;
            m_row.logGBh = (m_last->log - m_first->log) * perHour;
        } else {
            m_row.problems.push_back("the run ended before the measured window (" + std::to_string(kWindowFrom) +
                                     " s on) had two readings");
        }
        thinnedGrowth();
        if (m_hang) {
            m_row.hangNamedS = m_hang->at - (m_t0 + m_o.hangAt);
            m_row.hangChars = utf8Length(m_hang->alert.message);
            m_row.hangMessage = m_hang->alert.message;
        }
        if (m_straggler) {
            m_row.stragglerNamedS = m_straggler->at - m_t0;
            m_row.stragglerMessage = m_straggler->alert.message;
        }
        m_store.reset();
    }

    static size_t utf8Length(const std::string& s) {
        size_t n = 0;
        for (unsigned char c : s) n += (c & 0xC0) != 0x80;
        return n;
    }

    const Options& m_o;
    Row& m_row;
    std::string m_storePath;
    pid_t m_pid;
    std::unique_ptr<RunStore> m_store;
    int64_t m_run = 0;
    std::string m_runDir;
    double m_t0 = 0;
    double m_lastDeviceT = 0;
    ProcSample m_proc;
    std::optional<Mark> m_first, m_last;
    std::vector<Mark> m_marks;
    std::optional<Seen> m_hang, m_straggler;
};

bool names(const RunAlert& a, int rank) {
    return std::find(a.ranks.begin(), a.ranks.end(), rank) != a.ranks.end();
}

// The alerts the launcher's faults call for, naming its ranks; each problem into the row.
void checkAlerts(const Options& o, const Watch& w, const Emitted& e, Row& row) {
    if (o.hangAt >= 0) {
        if (!w.hang()) row.problems.push_back("no hang was named (silent rank " + std::to_string(e.hang_rank) + ")");
        else if (!names(w.hang()->alert, e.hang_rank))
            row.problems.push_back("the hang names other ranks than the silent rank " + std::to_string(e.hang_rank) +
                                   ": " + w.hang()->alert.message);
    }
    if (o.straggler) {
        if (!w.straggler())
            row.problems.push_back("no straggler was named (slow rank " + std::to_string(e.straggler_rank) + ")");
        else if (!names(w.straggler()->alert, e.straggler_rank))
            row.problems.push_back("the straggler alert names other ranks than " + std::to_string(e.straggler_rank) +
                                   ": " + w.straggler()->alert.message);
    }
}

Row measure(const Options& o, int ranks) {
    Row row;
    row.ranks = ranks;
    row.layout = layoutFor(ranks);
    char tmpl[] = "/tmp/parallax-scale-XXXXXX";
    if (!mkdtemp(tmpl)) {
        std::cerr << "bench_scale: cannot create a folder in /tmp: " << std::strerror(errno) << "\n";
        std::exit(1);
    }
    const std::string dir = tmpl;
    const std::string store = dir + "/parallax.db";
    const std::string counts = dir + "/lines-written.txt";
    setenv(kSecondsEnv, std::to_string(o.seconds).c_str(), 1);
    setenv(kHangAtEnv, std::to_string(o.hangAt).c_str(), 1);
    setenv(kStragglerEnv, o.straggler ? "1" : "0", 1);
    setenv(kCountsEnv, counts.c_str(), 1);
    unsetenv(kRanksEnv);

    const pid_t pid = startSupervisor(store, ranks, o, dir + "/supervisor.log");
    Watch watch(o, row, store, pid);
    watch.run();

    const std::optional<Emitted> emitted = readEmitted(counts);
    if (!emitted) {
        row.problems.push_back("the launcher wrote no counts (" + counts + "); see " + dir + "/supervisor.log");
    } else if (watch.runId() == 0) {
        row.problems.push_back("the run never appeared in the store; see " + dir + "/supervisor.log");
    } else {
        const RunStore reader(store);
        for (const std::string& m : mismatches(*emitted, storedRows(reader, watch.runId())))
            row.problems.push_back("MISMATCH " + m);
        row.telemetry = storedTelemetry(reader, watch.runId());
        int64_t lines = 0;
        for (const auto& [kind, n] : emitted->lines) lines += n;
        row.linesPerSecond = static_cast<double>(lines) / o.seconds;
        checkAlerts(o, watch, *emitted, row);
    }
    if (o.keep || !row.problems.empty()) std::cerr << "bench_scale: " << ranks << " ranks: kept " << dir << "\n";
    else fs::remove_all(dir);
    return row;
}

std::string fixed(double v, int digits) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", digits, v);
    return buf;
}

void printHeader(const Options& o) {
    std::printf("supervisor at scale: %.0f s per row%s%s; window %.0f s to %s\n", o.seconds,
                o.hangAt >= 0 ? (", rank silent from " + fixed(o.hangAt, 0) + " s").c_str() : "",
                o.straggler ? ", one rank computing twice as long" : "", kWindowFrom,
                o.hangAt >= 0 ? "the hang" : "the end");
    std::printf("| ranks | dp x tp x pp | lines/s | supervisor cores | peak RSS MiB | latency p50 ms | "
                "latency p95 ms | store GB/h | output.log.gz GB/h | hang named s | straggler named s | "
                "hang message chars | lines = rows |\n");
    std::printf("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
}

void printRow(const Row& r) {
    const std::string layout = std::to_string(r.layout.dp) + " x " + std::to_string(r.layout.tp) + " x " +
                               std::to_string(r.layout.pp);
    const bool same = std::none_of(r.problems.begin(), r.problems.end(),
                                   [](const std::string& p) { return p.rfind("MISMATCH", 0) == 0; });
    std::printf("| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.ranks, layout.c_str(),
                fixed(r.linesPerSecond, 0).c_str(), fixed(r.cores, 3).c_str(), fixed(r.rssMiB, 1).c_str(),
                fixed(percentile(r.latencyMs, 0.5), 0).c_str(), fixed(percentile(r.latencyMs, 0.95), 0).c_str(),
                fixed(r.storeGBh, 3).c_str(), fixed(r.logGBh, 3).c_str(),
                r.hangNamedS ? fixed(*r.hangNamedS, 1).c_str() : "-",
                r.stragglerNamedS ? fixed(*r.stragglerNamedS, 1).c_str() : "-",
                r.hangNamedS ? std::to_string(r.hangChars).c_str() : "-", same ? "yes" : "NO");
    std::fflush(stdout);
    if (!r.hangMessage.empty()) std::fprintf(stderr, "bench_scale: %d ranks: hang: %s\n", r.ranks, r.hangMessage.c_str());
    if (!r.stragglerMessage.empty())
        std::fprintf(stderr, "bench_scale: %d ranks: straggler: %s\n", r.ranks, r.stragglerMessage.c_str());
    for (const std::string& p : r.problems) std::fprintf(stderr, "bench_scale: %d ranks: %s\n", r.ranks, p.c_str());
}

// The second table (--raw-minutes): growth before and once thinning keeps up, rows against samples.
void printThinning(const Options& o, const std::vector<Row>& rows) {
    const double from = 60.0 * double(o.rawMinutes) + kThinnedAfter;
    std::printf("\nthinning: raw_telemetry_minutes = %lld\n", static_cast<long long>(o.rawMinutes));
    std::printf("| ranks | store GB/h, %.0f to %.0f s (raw) | store GB/h, from %.0f s (thinning runs) | "
                "raw s at its start (device / rank_step) | raw s at its end | "
                "device rows | device samples | rank_step rows | rank steps |\n",
                kWindowFrom, kWindowFrom + 60, from);
    std::printf("|---:|---:|---:|---|---|---:|---:|---:|---:|\n");
    auto raw = [](double device, double steps) { return fixed(device, 0) + " / " + fixed(steps, 0); };
    for (const Row& r : rows) {
        const std::optional<ThinnedGrowth>& g = r.thinnedGrowth;
        std::printf("| %d | %s | %s | %s | %s | %lld | %lld | %lld | %lld |\n", r.ranks,
                    r.rawGrowth ? fixed(r.rawGrowth->storeGBh, 3).c_str() : "-",
                    g ? fixed(g->storeGBh, 3).c_str() : "-",
                    g ? raw(g->rawDeviceFrom, g->rawStepsFrom).c_str() : "-",
                    g ? raw(g->rawDeviceTo, g->rawStepsTo).c_str() : "-",
                    static_cast<long long>(r.telemetry.deviceRows), static_cast<long long>(r.telemetry.deviceSamples),
                    static_cast<long long>(r.telemetry.rankStepRows), static_cast<long long>(r.telemetry.rankSteps));
    }
    std::fflush(stdout);
}

// The child: the supervisor of one scale run, as parallax-cli run runs it.
int supervise(int argc, char** argv) {
    if (argc != 6) usage("--supervise STORE RANKS SECONDS RAW_MINUTES");
    RunStore store(argv[2]);
    const RunRecord r = superviseScaleRun(store, std::atoi(argv[3]), std::atof(argv[4]), PARALLAX_SCALE_LAUNCHER, true,
                                          30, std::atoll(argv[5]));
    std::cout << "run " << r.id << " " << runStateName(r.state) << ": " << r.exit_reason << std::endl;
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    if (argc > 1 && std::string(argv[1]) == "--supervise") return supervise(argc, argv);
    const Options o = readOptions(argc, argv);
    printHeader(o);
    bool failed = false;
    std::vector<Row> rows;
    for (int ranks : o.ranks) {
        rows.push_back(measure(o, ranks));
        printRow(rows.back());
        failed = failed || !rows.back().problems.empty();
    }
    if (o.rawMinutes > 0) printThinning(o, rows);
    if (failed) std::fprintf(stderr, "bench_scale: FAILED (see above)\n");
    return failed ? 1 : 0;
}
