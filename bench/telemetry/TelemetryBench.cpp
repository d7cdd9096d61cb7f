// The supervisor's path for launcher output, measured: decoding alone, demultiplexing + decoding,
// and the whole path (line cutting, raw output.log, UTF-8 check, demultiplexing, decoding, batched
// writes into a SQLite store on disk) over pre-generated Open MPI tagged lines.
//
//   bench_telemetry [--lines N] [--ranks R] [--repeat K] [--dir PATH] [--stages decode,demux,store]
//
// Each stage runs K times (decode and demux after one warm-up pass); the table shows the median and
// the best of wall-clock time, and the median of this process's CPU time, which is what the stage
// would get on an otherwise idle machine.
#include "core/launch/OutputDemux.h"
#include "core/launch/OutputRouter.h"
#include "core/launch/RawOutput.h"
#include "core/store/BatchedWriter.h"
#include "core/store/RunStore.h"
#include "core/telemetry/TelemetryCodec.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <ctime>
#include <random>
#include <string>
#include <vector>

using namespace parallax;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

struct Corpus {
    std::string out;                  // the launcher's stdout, tagged
    std::string err;                  // the launcher's stderr, tagged
    std::vector<std::string> payloads; // every rank line without its tag (for decode alone)
    size_t lines = 0;
    size_t counts[6] = {}; // step, device, span, comm, plain, stderr
};

// One training step of an R-rank run: rank 0's step event, a device sample and a forward and a
// backward span per rank, a comm event from two ranks, and a few plain lines (NCCL, a warning).
Corpus makeCorpus(size_t target, int ranks) {
    Corpus c;
    std::mt19937 rng(7);
    std::uniform_real_distribution<double> jitter(0.0, 1.0);
    const char* plain[] = {"NCCL INFO comm 0x55d5c3a0 rank 3 nranks 8 cudaDev 3 busId 4a000 - Init COMPLETE",
                           "[W reducer.cpp:1300] Warning: find_unused_parameters=True was specified",
                           "epoch 3: 1024/50000 samples", "NCCL INFO Channel 00/02 :    0   1   2   3   4   5   6   7"};
    auto add = [&](std::string& to, int rank, const char* stream, const std::string& payload) {
        to += "[1,";
        to += std::to_string(rank);
        to += "]<";
        to += stream;
        to += ">:";
        to += payload;
        to += '\n';
        c.payloads.push_back(payload);
        ++c.lines;
    };
    double t = 1714567890.0;
    for (int64_t step = 1; c.lines < target; ++step) {
        t += 0.8;
        StepEvent s;
        s.step = step;
        s.loss = 3.0 / std::sqrt(static_cast<double>(step)) + 0.01 * jitter(rng);
        s.lr = 3e-4;
        s.grad_norm = 0.8 + 0.1 * jitter(rng);
        s.tokens_per_s = 120000 + 1000 * jitter(rng);
        s.samples_per_s = 60 + jitter(rng);
        s.step_ms = 800 + 10 * jitter(rng);
        s.step_ms_min = s.step_ms - 5;
        s.step_ms_max = s.step_ms + 7;
        s.slowest_rank = static_cast<int>(step % ranks);
        s.mfu = 0.41;
        s.tokens = step * 65536;
        s.peak_mem = 6.1e10;
        s.t = t;
        add(c.out, 0, "stdout", encodeEvent(s));
        ++c.counts[0];
        for (int r = 0; r < ranks; ++r) {
            DeviceEvent d;
            d.rank = r;
            d.host = "gpu-node-" + std::to_string(r / 8);
            d.device = r % 8;
            d.util = 90 + 10 * jitter(rng);
            d.mem_used = 6.0e10 + 1e9 * jitter(rng);
            d.mem_total = 1.4e11;
            d.power_w = 600 + 50 * jitter(rng);
            d.temp_c = 60 + 5 * jitter(rng);
            d.sm_clock_mhz = 1980;
            d.t = t + 0.01 * r;
            add(c.out, r, "stdout", encodeEvent(d));
            ++c.counts[1];
            for (const char* kind : {"F", "B"}) {
                SpanEvent sp;
                sp.rank = r;
                sp.stage = r % 2;
                sp.step = step;
                sp.microbatch = static_cast<int>(step % 4);
                sp.kind = kind;
                sp.start = t + 0.1 * jitter(rng);
                sp.end = sp.start + 0.05;
                add(c.out, r, "stdout", encodeEvent(sp));
                ++c.counts[2];
            }
        }
        for (int r = 0; r < 2; ++r) {
            CommEvent cm;
            cm.rank = static_cast<int>((step + r) % ranks);
            cm.collectives = step * 40;
            cm.bytes = step * 40 * (1LL << 25);
            cm.last_seq = step * 40 - 1;
            cm.t = t;
            add(c.out, cm.rank, "stdout", encodeEvent(cm));
            ++c.counts[3];
        }
        for (int k = 0; k < 2; ++k) {
            add(c.out, static_cast<int>((step + k) % ranks), "stdout", plain[(step + k) % 4]);
            ++c.counts[4];
        }
        add(c.err, static_cast<int>(step % ranks), "stderr", "UserWarning: the given buffer is not writable");
        ++c.counts[5];
    }
    return c;
}

double cpuNow() {
    timespec t{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// Wall and CPU time of one pass.
struct Timer {
    Clock::time_point wall0 = Clock::now();
    double cpu0 = cpuNow();
    std::pair<double, double> stop() const {
        return {std::chrono::duration<double>(Clock::now() - wall0).count(), cpuNow() - cpu0};
    }
};

struct Row {
    std::string name;
    double median = 0; // lines/s, wall clock
    double best = 0;   // lines/s, wall clock
    double cpu = 0;    // lines/s, CPU time (median)
    double mbPerS = 0; // wall clock, median
};

Row summarize(const std::string& name, std::vector<std::pair<double, double>> times, size_t lines, size_t bytes) {
    std::vector<double> wall;
    std::vector<double> cpu;
    for (const auto& [w, c] : times) {
        wall.push_back(w);
        cpu.push_back(c);
    }
    std::sort(wall.begin(), wall.end());
    std::sort(cpu.begin(), cpu.end());
    Row r;
    r.name = name;
    r.median = static_cast<double>(lines) / wall[wall.size() / 2];
    r.best = static_cast<double>(lines) / wall.front();
    r.cpu = static_cast<double>(lines) / cpu[cpu.size() / 2];
    r.mbPerS = static_cast<double>(bytes) / wall[wall.size() / 2] / 1e6;
    return r;
}

} // namespace

int main(int argc, char** argv) {
    size_t target = 1000000;
    int ranks = 8;
    int repeat = 3;
    std::string dir;
    std::string stages = "decode,demux,store";
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string key = argv[i];
        if (key == "--lines")
            target = std::strtoull(argv[i + 1], nullptr, 10);
        else if (key == "--ranks")
            ranks = std::max(1, std::atoi(argv[i + 1]));
        else if (key == "--repeat")
            repeat = std::max(1, std::atoi(argv[i + 1]));
        else if (key == "--dir")
            dir = argv[i + 1];
        else if (key == "--stages")
            stages = argv[i + 1];
    }
    if (dir.empty()) {
        char tmpl[] = "/tmp/parallax-bench-XXXXXX";
        if (!mkdtemp(tmpl)) {
            std::perror("mkdtemp");
            return 1;
        }
        dir = tmpl;
    }
    fs::create_directories(dir);

    const Corpus c = makeCorpus(target, ranks);
    const size_t bytes = c.out.size() + c.err.size();
    std::printf("telemetry path: %zu lines, %.1f MB, %d ranks; %.0f%% span, %.0f%% device, %.0f%% step, %.0f%% comm, "
                "%.0f%% plain (stdout), %.0f%% plain (stderr)\n",
                c.lines, static_cast<double>(bytes) / 1e6, ranks, 100.0 * c.counts[2] / c.lines,
                100.0 * c.counts[1] / c.lines, 100.0 * c.counts[0] / c.lines, 100.0 * c.counts[3] / c.lines,
                100.0 * c.counts[4] / c.lines, 100.0 * c.counts[5] / c.lines);

    std::vector<Row> rows;

    // 1. decode alone
    if (stages.find("decode") != std::string::npos) {
        std::vector<std::pair<double, double>> times;
        size_t payloadBytes = 0;
        for (const std::string& p : c.payloads)
            payloadBytes += p.size();
        DecodedLine d;
        size_t events = 0;
        for (int k = 0; k < repeat + 1; ++k) {
            events = 0;
            const Timer timer;
            for (const std::string& p : c.payloads) {
                decodeLine(p, d);
                events += d.kind == DecodedLine::Kind::Event;
            }
            if (k > 0) // the first pass warms caches and the allocator
                times.push_back(timer.stop());
        }
        if (events + c.counts[4] + c.counts[5] != c.lines) {
            std::fprintf(stderr, "decode: %zu events, expected %zu\n", events, c.lines - c.counts[4] - c.counts[5]);
            return 1;
        }
        rows.push_back(summarize("decode", times, c.lines, payloadBytes));
    }

    // 2. demultiplex + decode, no store
    if (stages.find("demux") != std::string::npos) {
        std::vector<std::pair<double, double>> times;
        for (int k = 0; k < repeat + 1; ++k) {
            OutputDemux demux(LauncherFormat::OpenMpi);
            DecodedLine d;
            size_t n = 0;
            auto sink = [&](const DemuxedLine& line) {
                decodeLine(line.payload, d);
                ++n;
            };
            const Timer timer;
            for (const std::string* text : {&c.out, &c.err}) {
                size_t pos = 0;
                while (pos < text->size()) {
                    const size_t nl = text->find('\n', pos);
                    demux.feed(text == &c.out ? OutputStream::Stdout : OutputStream::Stderr,
                               std::string_view(*text).substr(pos, nl - pos), sink);
                    pos = nl + 1;
                }
            }
            demux.finish(sink);
            if (k > 0)
                times.push_back(timer.stop());
            if (n != c.lines) {
                std::fprintf(stderr, "demux: %zu lines, expected %zu\n", n, c.lines);
                return 1;
            }
        }
        rows.push_back(summarize("demux + decode", times, c.lines, bytes));
    }

    // 3. the whole path into a store on disk, in pipe-sized reads
    size_t storedRows = 0;
    int64_t rawIn = 0, rawOut = 0; // output.log.gz: bytes in, bytes written
    if (stages.find("store") != std::string::npos) {
        std::vector<std::pair<double, double>> times;
        const int runs = std::max(1, repeat - 1);
        for (int k = 0; k < runs; ++k) {
            const fs::path db = fs::path(dir) / ("bench-" + std::to_string(k) + ".db");
            fs::remove(db);
            fs::remove(fs::path(db.string() + "-wal"));
            fs::remove(fs::path(db.string() + "-shm"));
            RunStore store(db.string());
            NewRun nr;
            nr.name = "bench";
            nr.world_size = ranks;
            const int64_t run = store.createRun(nr);
            std::FILE* raw = std::fopen((fs::path(dir) / kCompressedOutputName).c_str(), "w");
            std::setvbuf(raw, nullptr, _IOFBF, 1 << 20);
            RawOutputWriter compressed(raw); // as the supervisor writes output.log.gz
            const Timer timer;
            {
                BatchedWriter writer(store, run);
                OutputRouter router(writer, LauncherFormat::OpenMpi, "bench-host", false);
                router.setRawLog(&compressed);
                constexpr size_t kRead = 1 << 16;
                size_t outPos = 0;
                size_t errPos = 0;
                const double now = 1714567890.0;
                // Alternate the two pipes as poll() would report them: mostly stdout.
                while (outPos < c.out.size() || errPos < c.err.size()) {
                    if (outPos < c.out.size()) {
                        const size_t n = std::min(kRead, c.out.size() - outPos);
                        router.append(OutputStream::Stdout, c.out.data() + outPos, n, now);
                        outPos += n;
                    }
                    if (errPos < c.err.size() && (outPos >= c.out.size() || (outPos / kRead) % 16 == 0)) {
                        const size_t n = std::min(kRead, c.err.size() - errPos);
                        router.append(OutputStream::Stderr, c.err.data() + errPos, n, now);
                        errPos += n;
                    }
                    writer.maybeFlush();
                }
                router.finish(now);
                writer.flush();
            }
            compressed.finish();
            times.push_back(timer.stop());
            rawIn = compressed.bytesIn();
            rawOut = compressed.bytesOut();
            std::fclose(raw);
            storedRows = store.metrics(run).size() + store.deviceSamples(run).size() + store.comms(run).size() +
                         static_cast<size_t>(store.logCount(run));
            for (int64_t s : store.spanSteps(run))
                storedRows += store.spans(run, s).size();
        }
        if (storedRows != c.lines) {
            std::fprintf(stderr, "whole path: %zu rows stored, expected %zu\n", storedRows, c.lines);
            return 1;
        }
        rows.push_back(summarize("whole path (demux + decode + store)", times, c.lines, bytes));
    }

    std::printf("\n%-36s %12s %12s %12s %8s\n", "stage", "lines/s", "best", "CPU lines/s", "MB/s");
    for (const Row& r : rows)
        std::printf("%-36s %12.0f %12.0f %12.0f %8.1f\n", r.name.c_str(), r.median, r.best, r.cpu, r.mbPerS);
    if (storedRows > 0) {
        const Row& whole = rows.back();
        std::printf("\nwhole path target 300000 lines/s: %s by wall clock (median), %s by CPU time; %zu rows in SQLite (WAL)\n",
                    whole.median >= 300000 ? "met" : "NOT met", whole.cpu >= 300000 ? "met" : "NOT met", storedRows);
        std::printf("output.log.gz: %.1f MB of output in %.1f MB (%.1f x smaller)\n", double(rawIn) / 1e6,
                    double(rawOut) / 1e6, rawOut > 0 ? double(rawIn) / double(rawOut) : 0.0);
    }
    std::error_code ec;
    fs::remove_all(dir, ec);
    return 0;
}
