// Throughput of the run store on this machine: inserts through BatchedWriter (as the supervisor
// writes them), full-text searches over a million log lines, and listing 10,000 runs. Prints one
// table.
//
//   bench_store [--dir FOLDER] [--scale F] [--repeat N] [--only metrics,devices,logs,runs]
//               [--keep]
//
// Inserts run N times (default 3), each into a fresh database file, and report the median;
// queries run 5 times after one warm-up and report the median. The database is a file on disk
// (FOLDER, default $TMPDIR or /tmp), never :memory:, so WAL and page cache costs are real. The
// "cpu s" column is this process's CPU time for the reported run: on a machine shared with other
// work, rows / cpu s shows what the store itself costs. --scale multiplies every row count.

#include "core/store/BatchedWriter.h"
#include "core/store/RunStore.h"

#include <sqlite3.h>
#include <sys/resource.h>
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

double cpuSeconds() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

// Wall and CPU seconds of one timed call.
struct Timing {
    double wall = 0;
    double cpu = 0;
};

Timing timed(const std::function<void()>& fn) {
    const double c0 = cpuSeconds();
    const auto t0 = Clock::now();
    fn();
    return {std::chrono::duration<double>(Clock::now() - t0).count(), cpuSeconds() - c0};
}

Timing median(std::vector<Timing> v) {
    std::sort(v.begin(), v.end(), [](const Timing& a, const Timing& b) { return a.wall < b.wall; });
    return v[v.size() / 2];
}

// "1M", "300k", "10k", "512".
std::string count(int64_t n) {
    if (n >= 1'000'000 && n % 1'000'000 == 0) return std::to_string(n / 1'000'000) + "M";
    if (n >= 1'000 && n % 1'000 == 0) return std::to_string(n / 1'000) + "k";
    return std::to_string(n);
}

struct Row {
    std::string what;
    int64_t rows;
    Timing time;
    bool rate;     // throughput (rows/s, higher is better) or latency (ms, lower is better)
    double target; // rows/s minimum, or ms maximum
};

void printTable(const std::vector<Row>& rows) {
    std::printf("\n%-46s %9s %9s %8s %15s %14s %5s\n", "benchmark", "rows", "seconds", "cpu s",
                "result", "target", "pass");
    std::printf("%s\n", std::string(112, '-').c_str());
    for (const Row& r : rows) {
        char result[32], target[32];
        bool pass;
        if (r.rate) {
            const double perS = static_cast<double>(r.rows) / r.time.wall;
            std::snprintf(result, sizeof result, "%.0f rows/s", perS);
            std::snprintf(target, sizeof target, ">= %.0f", r.target);
            pass = perS >= r.target;
        } else {
            std::snprintf(result, sizeof result, "%.2f ms", r.time.wall * 1e3);
            std::snprintf(target, sizeof target, "<= %.0f ms", r.target);
            pass = r.time.wall * 1e3 <= r.target;
        }
        std::printf("%-46s %9lld %9.3f %8.3f %15s %14s %5s\n", r.what.c_str(),
                    static_cast<long long>(r.rows), r.time.wall, r.time.cpu, result, target,
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
    std::string only;  // comma-separated groups; empty: all
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
    Bench(const Bench&) = delete;
    Bench& operator=(const Bench&) = delete;

    void run() {
        if (wanted("metrics")) metrics();
        if (wanted("devices")) devices();
        if (wanted("logs")) logs();
        if (wanted("runs")) runs();
        std::printf("Run store benchmark: SQLite %s, databases in %s, inserts: median of %d\n",
                    sqlite3_libversion(), m_dir.c_str(), m_o.repeat);
        printTable(m_table);
    }

private:
    bool wanted(const std::string& group) const {
        return m_o.only.empty() ||
               ("," + m_o.only + ",").find("," + group + ",") != std::string::npos;
    }

    int64_t n(int64_t base) const {
        return std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(base) * m_o.scale));
    }

    // The store and its log index (see RunStore::logIndexPath), each with its WAL files.
    std::string freshDb(const std::string& name) const {
        const fs::path p = m_dir / name;
        for (const char* file : {"", ".logindex"}) {
            for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(p.string() + file + suffix);
        }
        return p.string();
    }

    static int64_t newRun(RunStore& store, const std::string& name) {
        NewRun r;
        r.name = name;
        r.model_kind = "gpt";
        r.layout = "dp8 tp1 pp1 zero1";
        return store.createRun(r);
    }

    // Median of `repeat` runs of `body`, each against a fresh database `name`.db (run id 1).
    Timing insertRepeated(const std::string& name,
                          const std::function<void(RunStore&, int64_t)>& body) const {
        std::vector<Timing> times;
        for (int i = 0; i < m_o.repeat; ++i) {
            RunStore store(freshDb(name + ".db"));
            const int64_t run = newRun(store, name);
            times.push_back(timed([&] { body(store, run); }));
        }
        return median(times);
    }

    static Timing timedQuery(const std::function<void()>& q) {
        q(); // warm-up: the page cache of a console that has been open a while
        std::vector<Timing> times;
        for (int i = 0; i < 5; ++i) times.push_back(timed(q));
        return median(times);
    }

    void metrics() {
        const int64_t rows = n(1'000'000);
        const Timing t = insertRepeated("metrics", [&](RunStore& store, int64_t run) {
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
            for (int64_t s = 0; s < rows; ++s) {
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
        m_table.push_back({"metric rows via BatchedWriter", rows, t, true, 1'000'000});
    }

    void devices() {
        const int64_t rows = n(1'000'000);
        const Timing t = insertRepeated("devices", [&](RunStore& store, int64_t run) {
            BatchedWriter w(store, run);
            DeviceEvent d;
            const std::string hosts[] = {"gpu-node-01", "gpu-node-02"};
            for (int64_t i = 0; i < rows; ++i) {
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
        // 1,024 GPUs sampled every 100 ms make 10,000 rows/s: the target leaves 50x headroom.
        m_table.push_back({"device samples via BatchedWriter", rows, t, true, 500'000});
    }

    void logs() {
        const int64_t rows = n(1'000'000);
        const std::string label = count(rows) + " lines";
        // Generated before timing, so that only the store is measured.
        LogLineGenerator gen(42);
        std::vector<LogRow> lines;
        lines.reserve(static_cast<size_t>(rows));
        for (int64_t i = 0; i < rows; ++i) {
            LogRow r;
            r.t = 1.7e9 + static_cast<double>(i) * 0.001;
            r.rank = static_cast<int>(i % 16);
            r.host = r.rank < 8 ? "gpu-node-01" : "gpu-node-02";
            r.level = i % 50 == 0 ? LogLevel::Warn : (i % 997 == 0 ? LogLevel::Error : LogLevel::Info);
            r.stream = "stdout";
            r.message = gen.next();
            lines.push_back(std::move(r));
        }
        // Until every line is written and searchable: the index is filled on a second thread
        // while the rows are written (see BatchedWriter), and the time includes its last batch.
        const Timing t = insertRepeated("logs", [&](RunStore& store, int64_t run) {
            BatchedWriter w(store, run);
            for (const LogRow& r : lines) w.add(r);
            w.flush();
            w.waitIndexed();
        });
        m_table.push_back({"log lines + FTS5 index via BatchedWriter", rows, t, true, 200'000});

        // Queries over the database of the last repetition: one run of `rows` lines.
        const std::string db = (m_dir / "logs.db").string();
        {
            RunStore store(db);
            const int64_t run = 1;
            size_t found = 0;
            auto search = [&](const std::string& text) {
                LogQuery q;
                q.match = text;
                q.limit = 1000;
                found = store.logs(run, q).size();
            };
            // A rare identifier (a few hundred lines), a frequent word (a tenth of the lines), a
            // phrase of frequent words (rare as a phrase).
            Timing q = timedQuery([&] { search(gen.rareWord(123)); });
            m_table.push_back({"FTS search, rare word, " + label + " (found)",
                               static_cast<int64_t>(found), q, false, 20});
            q = timedQuery([&] { search("timeout"); });
            m_table.push_back({"FTS search, common word, first 1000", static_cast<int64_t>(found),
                               q, false, 20});
            q = timedQuery([&] { search("\"waiting for peer\""); });
            m_table.push_back({"FTS phrase search (found)", static_cast<int64_t>(found), q, false,
                               50});
            int64_t matches = 0;
            q = timedQuery([&] {
                LogQuery c;
                c.match = "timeout";
                matches = store.logCount(run, c);
            });
            m_table.push_back({"FTS count, common word", matches, q, false, 200});
            q = timedQuery([&] {
                LogQuery w;
                w.min_level = "warn";
                w.limit = 1000;
                found = store.logs(run, w).size();
            });
            m_table.push_back({"warn and above, first 1000", static_cast<int64_t>(found), q, false,
                               20});
            q = timedQuery([&] {
                LogQuery r;
                r.ranks = {3, 11};
                r.descending = true;
                r.limit = 1000;
                found = store.logs(run, r).size();
            });
            m_table.push_back({"2 of 16 ranks, last 1000", static_cast<int64_t>(found), q, false,
                               20});
        }
        // Deleting the run removes every line from the full-text index too. On a copy, so that
        // --keep leaves the searched database as it was.
        const std::string copy = freshDb("logs-delete.db");
        fs::copy_file(db, copy); // closed above: its WAL was checkpointed into the file
        fs::copy_file(db + ".logindex", copy + ".logindex");
        RunStore store(copy);
        m_table.push_back({"delete a run of " + label, rows,
                           timed([&] { store.deleteRun(1); }), false, 30000});
    }

    void runs() {
        const int64_t runCount = n(10'000);
        RunStore store(freshDb("runs.db"));
        std::string spec; // about the size of a real spec
        for (int i = 0; i < 40; ++i) spec += "key_" + std::to_string(i) + " = \"a typical value\"\n";
        const char* models[] = {"gpt", "qwen_image", "qwen2_5_vl"};
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
        Timing q = timedQuery([&] {
            RunFilter f;
            f.text = "mmdit";
            f.states = {RunState::Succeeded};
            f.order_by = "last_loss";
            f.descending = false;
            found = store.listRuns(f).size();
        });
        m_table.push_back({"listRuns of " + count(runCount) + ": text+state, by loss",
                           static_cast<int64_t>(found), q, false, 50});
        q = timedQuery([&] { found = store.listRuns(RunFilter{}).size(); });
        m_table.push_back({"listRuns of " + count(runCount) + ": all, specs included",
                           static_cast<int64_t>(found), q, false, 100});
    }

    Options m_o;
    fs::path m_dir;
    std::vector<Row> m_table;
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
            std::fprintf(stderr,
                         "usage: %s [--dir FOLDER] [--scale F] [--repeat N] "
                         "[--only metrics,devices,logs,runs] [--keep]\n",
                         argv[0]);
            return 2;
        }
    }
    if (o.scale <= 0) {
        std::fprintf(stderr, "bench_store: --scale must be a positive number\n");
        return 2;
    }
    try {
        Bench(o).run();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bench_store: %s\n", e.what());
        return 1;
    }
    return 0;
}
