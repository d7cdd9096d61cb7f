// Throughput of the run store on this machine: inserts through BatchedWriter (as the supervisor
// writes them), a full-text search over a million log lines, and listing runs. Prints one table.
//
//   bench_store [--dir FOLDER] [--scale F] [--repeat N] [--only metrics,devices,logs,runs]
//               [--keep]
//
// Inserts run N times (default 3) into a fresh database file each time and report the median;
// queries run 5 times after one warm-up and report the median. The database is a file on disk
// (FOLDER, default $TMPDIR or /tmp), never :memory:, so WAL and page cache costs are real.

#include "core/store/BatchedWriter.h"
#include "core/store/RunStore.h"

#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace parallax;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

struct Row {
    std::string what;
    int64_t rows;
    double seconds;
    bool rate;          // throughput (rows/s, higher is better) or latency (ms, lower is better)
    double target;      // rows/s minimum, or ms maximum
};

void printTable(const std::vector<Row>& rows) {
    std::printf("\n%-46s %10s %10s %14s %14s %6s\n", "benchmark", "rows", "seconds", "result",
                "target", "pass");
    std::printf("%s\n", std::string(105, '-').c_str());
    for (const Row& r : rows) {
        char result[32], target[32];
        bool pass;
        if (r.rate) {
            const double perS = static_cast<double>(r.rows) / r.seconds;
            std::snprintf(result, sizeof result, "%.0f rows/s", perS);
            std::snprintf(target, sizeof target, ">= %.0f", r.target);
            pass = perS >= r.target;
        } else {
            std::snprintf(result, sizeof result, "%.2f ms", r.seconds * 1e3);
            std::snprintf(target, sizeof target, "<= %.0f ms", r.target);
            pass = r.seconds * 1e3 <= r.target;
        }
        std::printf("%-46s %10lld %10.3f %14s %14s %6s\n", r.what.c_str(),
                    static_cast<long long>(r.rows), r.seconds, result, target,
                    pass ? "pass" : "FAIL");
    }
}

// Log lines like a training job's: NCCL chatter, step reports, warnings, paths, numbers; 60-120
// characters drawn from a vocabulary large enough that the index has many distinct terms.
class LogLineGenerator {
public:
    explicit LogLineGenerator(uint32_t seed) : m_rng(seed) {
        const char* common[] = {
            "NCCL", "INFO", "WARN", "rank", "step", "loss", "grad_norm", "lr", "tokens", "device",
            "cuda", "memory", "allocated", "reserved", "checkpoint", "saved", "loading", "shard",
            "pipeline", "stage", "microbatch", "forward", "backward", "optimizer", "allreduce",
            "allgather", "reduce_scatter", "bucket", "ready", "waiting", "for", "peer", "timeout",
            "channel", "ring", "tree", "via", "P2P", "IPC", "SHM", "NET", "Socket", "IB",
            "throughput", "samples", "per", "second", "elapsed", "epoch", "dataset", "batch",
            "warmup", "cosine", "schedule", "scaler", "bf16", "fp32", "overflow", "skipped",
            "the", "of", "on", "to", "in", "is", "at", "with", "from", "and", "not", "was"};
        for (const char* w : common) m_words.emplace_back(w);
        // Identifiers, host names and error codes: the rare terms a person actually searches for.
        const char* syllables[] = {"ka", "ro", "mi", "te", "su", "na", "vo", "li", "pe", "zu",
                                   "xa", "qi", "do", "fe", "gu", "ha", "jo", "wi", "by", "ce"};
        std::uniform_int_distribution<int> syl(0, 19), len(2, 4);
        for (int i = 0; i < 5000; ++i) {
            std::string w;
            for (int k = len(m_rng); k > 0; --k) w += syllables[syl(m_rng)];
            m_words.push_back(w);
        }
    }

    // One of the rare words (identifiers, host names): a search for it finds a few lines.
    const std::string& rareWord(size_t i) const { return m_words[72 + i % (m_words.size() - 72)]; }

    std::string next() {
        std::uniform_int_distribution<size_t> common(0, 71), rare(72, m_words.size() - 1);
        std::uniform_int_distribution<int> pick(0, 9), num(0, 99999), len(60, 120);
        const size_t target = static_cast<size_t>(len(m_rng));
        std::string line;
        line.reserve(target + 24);
        while (line.size() < target) {
            const int p = pick(m_rng);
            if (!line.empty()) line += ' ';
            if (p < 6) line += m_words[common(m_rng)];
            else if (p < 8) line += m_words[rare(m_rng)];
            else if (p < 9) line += std::to_string(num(m_rng));
            else line += m_words[common(m_rng)] + "=" + std::to_string(num(m_rng) / 100.0);
        }
        return line;
    }

private:
    std::mt19937 m_rng;
    std::vector<std::string> m_words;
};

struct Options {
    std::string dir;
    double scale = 1.0;
    int repeat = 3;
    std::string only; // comma-separated groups; empty: all
    bool keep = false; // leave the databases for inspection
};

class Bench {
public:
    explicit Bench(Options o) : m_o(std::move(o)) {
        m_dir = fs::path(m_o.dir) / ("parallax-bench-" + std::to_string(getpid()));
        fs::create_directories(m_dir);
    }
    ~Bench() {
        std::error_code ec;
        if (m_o.keep) std::printf("databases kept in %s\n", m_dir.c_str());
        else fs::remove_all(m_dir, ec);
    }

    bool wanted(const std::string& group) const {
        return m_o.only.empty() || ("," + m_o.only + ",").find("," + group + ",") != std::string::npos;
    }

    int64_t n(int64_t base) const { return std::max<int64_t>(1, static_cast<int64_t>(base * m_o.scale)); }

    std::string freshDb(const std::string& name) {
        const fs::path p = m_dir / name;
        for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(p.string() + suffix);
        return p.string();
    }

    static int64_t newRun(RunStore& store, const std::string& name) {
        NewRun r;
        r.name = name;
        r.model_kind = "gpt";
        r.layout = "dp8 tp1 pp1 zero1";
        return store.createRun(r);
    }

    // Median seconds of `repeat` runs of `body` against a fresh database.
    double insertRepeated(const std::string& name, const std::function<void(RunStore&, int64_t)>& body) {
        std::vector<double> times;
        for (int i = 0; i < m_o.repeat; ++i) {
            RunStore store(freshDb(name + ".db"));
            const int64_t run = newRun(store, name);
            const auto t0 = Clock::now();
            body(store, run);
            times.push_back(secondsSince(t0));
        }
        return median(times);
    }

    static double timedQuery(const std::function<void()>& q) {
        q(); // warm-up: the page cache of a console that has been open a while
        std::vector<double> times;
        for (int i = 0; i < 5; ++i) {
            const auto t0 = Clock::now();
            q();
            times.push_back(secondsSince(t0));
        }
        return median(times);
    }

    void run() {
        std::vector<Row> table;

        if (wanted("metrics")) {
        const int64_t metricRows = n(1'000'000);
        const double metricS = insertRepeated("metrics", [&](RunStore& store, int64_t run) {
            BatchedWriter w(store, run);
            StepEvent e;
            e.lr = 3e-4;
            e.grad_norm = 0.8;
            e.samples_per_s = 512;
            e.step_ms = 250;
            e.step_ms_min = 240;
            e.step_ms_max = 262;
            e.mfu = 0.41;
            e.peak_mem = 7.1e10;
            for (int64_t s = 0; s < metricRows; ++s) {
                e.step = s;
                e.loss = 3.0 / static_cast<double>(s + 1);
                e.tokens_per_s = 1.2e6 + static_cast<double>(s % 97);
                e.tokens = s * 524288;
                e.slowest_rank = static_cast<int>(s % 8);
                e.t = 1.7e9 + static_cast<double>(s) * 0.25;
                w.add(e);
            }
            w.flush();
        });
        table.push_back({"metric rows via BatchedWriter", metricRows, metricS, true, 1'000'000});
        }

        if (wanted("devices")) {
        const int64_t deviceRows = n(1'000'000);
        const double deviceS = insertRepeated("devices", [&](RunStore& store, int64_t run) {
            BatchedWriter w(store, run);
            DeviceEvent d;
            const std::string hosts[] = {"gpu-node-01", "gpu-node-02"};
            for (int64_t i = 0; i < deviceRows; ++i) {
                d.rank = static_cast<int>(i % 16);
                d.host = hosts[d.rank / 8];
                d.device = d.rank % 8;
                d.util = static_cast<double>(i % 100);
                d.mem_used = 6.0e10 + static_cast<double>(i % 1000);
                d.mem_total = 1.41e11;
                d.power_w = 600;
                d.temp_c = 65;
                d.sm_clock_mhz = 1980;
                d.t = 1.7e9 + static_cast<double>(i / 16) * 0.5;
                w.add(d);
            }
            w.flush();
        });
        table.push_back({"device samples via BatchedWriter", deviceRows, deviceS, true, 500'000});
        }

        // Log lines: generated before timing, so that only the store is measured.
        if (wanted("logs")) {
        const int64_t logRows = n(1'000'000);
        std::vector<LogRow> lines;
        lines.reserve(static_cast<size_t>(logRows));
        LogLineGenerator gen(42);
        {
            for (int64_t i = 0; i < logRows; ++i) {
                LogRow r;
                r.t = 1.7e9 + static_cast<double>(i) * 0.001;
                r.rank = static_cast<int>(i % 16);
                r.host = r.rank < 8 ? "gpu-node-01" : "gpu-node-02";
                r.level = i % 50 == 0 ? "warn" : (i % 997 == 0 ? "error" : "info");
                r.stream = "stdout";
                r.message = gen.next();
                lines.push_back(std::move(r));
            }
        }
        const std::string logDb = m_dir / "logs.db";
        const double logS = insertRepeated("logs", [&](RunStore& store, int64_t run) {
            BatchedWriter w(store, run);
            for (const LogRow& r : lines) w.add(r);
            w.flush();
        });
        table.push_back({"log lines + FTS5 index via BatchedWriter", logRows, logS, true, 200'000});

        // Queries over the last log database written above (one run of logRows lines).
        {
            RunStore store(logDb);
            const int64_t run = 1;
            auto search = [&](const std::string& text, int64_t limit) {
                LogQuery q;
                q.match = text;
                q.limit = limit;
                return store.logs(run, q).size();
            };
            size_t found = 0;
            // A rare identifier (a handful of lines), and a frequent word (most lines).
            const double rareS = timedQuery([&] { found = search(gen.rareWord(123), 1000); });
            table.push_back({"FTS search, rare word, 1M lines (rows found)",
                             static_cast<int64_t>(found), rareS, false, 20});
            const double commonS = timedQuery([&] { found = search("timeout", 1000); });
            table.push_back({"FTS search, common word, first 1000 rows",
                             static_cast<int64_t>(found), commonS, false, 20});
            const double phraseS = timedQuery([&] { found = search("\"waiting for peer\"", 1000); });
            table.push_back({"FTS phrase search, first 1000 rows",
                             static_cast<int64_t>(found), phraseS, false, 50});
            int64_t count = 0;
            const double countS = timedQuery([&] {
                LogQuery q;
                q.match = "timeout";
                count = store.logCount(run, q);
            });
            table.push_back({"FTS count, common word", count, countS, false, 200});
            const double warnS = timedQuery([&] {
                LogQuery q;
                q.min_level = "warn";
                q.limit = 1000;
                found = store.logs(run, q).size();
            });
            table.push_back({"warn+ lines, first 1000", static_cast<int64_t>(found), warnS, false, 20});
            const double tailS = timedQuery([&] {
                LogQuery q;
                q.ranks = {3, 11};
                q.descending = true;
                q.limit = 1000;
                found = store.logs(run, q).size();
            });
            table.push_back({"2 ranks, last 1000 lines", static_cast<int64_t>(found), tailS, false, 20});
        }
        {
            // Deleting a run of a million lines re-reads every line to update the FTS index. On
            // a copy, so that --keep leaves the searched database as it was.
            const std::string copy = freshDb("logs-delete.db");
            fs::copy_file(logDb, copy); // closed above: its WAL was checkpointed into the file
            RunStore store(copy);
            const auto t0 = Clock::now();
            store.deleteRun(1);
            table.push_back({"delete a run of 1M log lines", logRows, secondsSince(t0), false, 30000});
        }
        }

        // 10,000 runs with realistic specs; list those matching a filter, newest first.
        if (wanted("runs")) {
            const int64_t runCount = n(10'000);
            RunStore store(freshDb("runs.db"));
            std::string spec;
            for (int i = 0; i < 40; ++i) spec += "key_" + std::to_string(i) + " = \"a typical spec value\"\n";
            const char* models[] = {"gpt", "mmdit", "vlm"};
            store.beginTransaction();
            for (int64_t i = 0; i < runCount; ++i) {
                NewRun r;
                r.name = std::string(models[i % 3]) + "-run-" + std::to_string(i);
                r.model_kind = models[i % 3];
                r.layout = "dp" + std::to_string(1 << (i % 4)) + " tp1 pp1 zero0";
                r.spec_toml = spec;
                r.tags = {i % 10 == 0 ? "baseline" : "sweep"};
                const int64_t id = store.createRun(r);
                StepEvent s;
                s.step = 100;
                s.loss = 1.0 + static_cast<double>(i % 1000) / 1000.0;
                s.tokens_per_s = 1000.0 * static_cast<double>(i % 50);
                store.updateSummary(id, s);
                if (i % 4 == 0) store.finishRun(id, RunState::Succeeded, 0, "");
            }
            store.commit();
            size_t found = 0;
            const double listS = timedQuery([&] {
                RunFilter f;
                f.text = "mmdit";
                f.states = {RunState::Succeeded};
                f.order_by = "last_loss";
                f.descending = false;
                found = store.listRuns(f).size();
            });
            table.push_back({"listRuns of 10k: text+state filter, by loss",
                             static_cast<int64_t>(found), listS, false, 50});
            const double allS = timedQuery([&] {
                RunFilter f;
                found = store.listRuns(f).size();
            });
            table.push_back({"listRuns of 10k: all, with specs", static_cast<int64_t>(found), allS,
                             false, 100});
        }

        std::printf("Run store benchmark (SQLite %s, database in %s, median of %d insert runs)\n",
                    sqlite3_libversion(), m_dir.c_str(), m_o.repeat);
        printTable(table);
    }

private:
    Options m_o;
    fs::path m_dir;
};

} // namespace

int main(int argc, char** argv) {
    Options o;
    const char* tmp = std::getenv("TMPDIR");
    o.dir = tmp && *tmp ? tmp : "/tmp";
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--dir" && i + 1 < argc) o.dir = argv[++i];
        else if (a == "--scale" && i + 1 < argc) o.scale = std::atof(argv[++i]);
        else if (a == "--repeat" && i + 1 < argc) o.repeat = std::max(1, std::atoi(argv[++i]));
        else if (a == "--only" && i + 1 < argc) o.only = argv[++i];
        else if (a == "--keep") o.keep = true;
        else {
            std::fprintf(stderr, "usage: %s [--dir FOLDER] [--scale F] [--repeat N] [--only GROUPS] [--keep]\n", argv[0]);
            return 2;
        }
    }
    try {
        Bench(o).run();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bench_store: %s\n", e.what());
        return 1;
    }
    return 0;
}
