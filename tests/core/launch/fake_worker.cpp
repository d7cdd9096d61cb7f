// A stand-in for parallax-worker in the supervisor's end-to-end tests: no MPI, no LibTorch. It reads
// its rank from the launcher's environment and prints what a worker prints (telemetry through the
// codec, plain lines on stdout and stderr, a malformed telemetry line), then ends as told:
//   --mode ok          rank 0 reports run_end succeeded, all exit 0
//   --mode exit        rank 1 exits with --code N, the others wait to be killed
//   --mode kill        rank 1 kills itself with SIGKILL, the others wait to be killed
//   --mode stop        every rank waits for SIGUSR1, then rank 0 reports run_end stopped; exit 0
//   --mode stubborn    every rank ignores SIGUSR1 and SIGTERM and sleeps (the supervisor escalates)
// PARALLAX_FAKE_MODE in the environment sets the mode too. Each rank writes its pid to <run dir>/pids/<rank>.pid first, so a test can check it is gone.
#include "core/telemetry/TelemetryCodec.h"

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

using namespace parallax;

namespace {

volatile std::sig_atomic_t g_usr1 = 0;
void onUsr1(int) { g_usr1 = 1; }

int envInt(const char* name, int fallback) {
    const char* v = std::getenv(name);
    return v ? std::atoi(v) : fallback;
}

void out(const std::string& line) {
    std::fwrite(line.data(), 1, line.size(), stdout);
    std::fputc('\n', stdout);
    std::fflush(stdout);
}

void err(const std::string& line) {
    std::fwrite(line.data(), 1, line.size(), stderr);
    std::fputc('\n', stderr);
    std::fflush(stderr);
}

double now() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void sleepFor(double s) { std::this_thread::sleep_for(std::chrono::duration<double>(s)); }

} // namespace

int main(int argc, char** argv) {
    // The mode may also come from the spec's [launch.env] (mpirun -x), for tests that drive parallax-cli.
    const char* modeEnv = std::getenv("PARALLAX_FAKE_MODE");
    std::string mode = modeEnv && *modeEnv ? modeEnv : "ok";
    std::string runDir;
    std::string resume;
    std::string spec;
    int code = 3;
    int steps = 5;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string key = argv[i];
        const std::string value = argv[i + 1];
        if (key == "--mode")
            mode = value;
        else if (key == "--run-dir")
            runDir = value;
        else if (key == "--resume")
            resume = value;
        else if (key == "--spec")
            spec = value;
        else if (key == "--code")
            code = std::atoi(value.c_str());
        else if (key == "--steps")
            steps = std::atoi(value.c_str());
    }
    const int rank = envInt("OMPI_COMM_WORLD_RANK", envInt("PMI_RANK", envInt("SLURM_PROCID", 0)));
    const int world = envInt("OMPI_COMM_WORLD_SIZE", envInt("PMI_SIZE", envInt("SLURM_NTASKS", 1)));
    std::signal(SIGUSR1, onUsr1);
    if (mode == "stubborn") {
        std::signal(SIGUSR1, SIG_IGN);
        std::signal(SIGTERM, SIG_IGN);
    }

    std::filesystem::create_directories(runDir + "/pids");
    std::ofstream(runDir + "/pids/" + std::to_string(rank) + ".pid") << getpid() << "\n";

    char host[256] = {};
    gethostname(host, sizeof host - 1);
    if (rank == 0) {
        RunStartEvent start;
        start.world = world;
        start.dp = world;
        start.device = "cpu";
        for (int r = 0; r < world; ++r) {
            start.hosts.push_back(std::string("fakehost-") + std::to_string(r));
            start.devices.push_back("cpu");
            start.clock_offsets.push_back(0.0);
        }
        start.t = now();
        out(encodeEvent(start));
        std::ofstream(runDir + "/pids/started") << "1\n";
    } else {
        // Lines are attributed to hosts from run_start: let rank 0's reach the launcher first.
        const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while (!std::filesystem::exists(runDir + "/pids/started") && std::chrono::steady_clock::now() < give_up)
            sleepFor(0.005);
        sleepFor(0.1);
    }
    out("rank " + std::to_string(rank) + " starting with spec " + spec);
    err("rank " + std::to_string(rank) + ": WARNING: this is a warning on stderr");
    if (!resume.empty())
        out("resuming from " + resume);
    if (rank == 1) {
        out("@plx {\"ev\":\"step\",\"v\":1,\"step\":"); // truncated telemetry
        err("Traceback (most recent call last): an error-looking line");
        out(std::string("bytes \xff\xfe are not UTF-8"));
        out("long:" + std::string(10000, 'L'));
    }
    if (rank == 0) {
        LogEvent log;
        log.rank = -1; // the supervisor fills in the rank from the tag
        log.level = "info";
        log.message = "long telemetry message " + std::string(9000, 'm');
        out(encodeEvent(log));
    }

    for (int s = 0; s < steps; ++s) { // steps count from 0, as the worker's do
        DeviceEvent d;
        d.rank = rank;
        d.host = host;
        d.cpu_pct = 100.0 + rank;
        d.rss = 1e8;
        d.t = now();
        out(encodeEvent(d));
        SpanEvent span;
        span.rank = rank;
        span.step = s;
        span.kind = "F";
        span.start = now();
        span.end = span.start + 0.001;
        out(encodeEvent(span));
        if (rank == 0) {
            StepEvent step;
            step.step = s;
            step.loss = 10.0 / (s + 1);
            step.lr = 1e-3;
            step.tokens_per_s = 1000.0 * (s + 1);
            step.tokens = 512 * (s + 1);
            step.t = now();
            out(encodeEvent(step));
        }
    }

    if (mode == "ok") {
        if (rank == 0) {
            std::filesystem::create_directories(runDir + "/checkpoints/step-" + std::to_string(steps));
            CheckpointEvent ck;
            ck.step = steps;
            ck.path = runDir + "/checkpoints/step-" + std::to_string(steps);
            ck.t = now();
            out(encodeEvent(ck));
            RunEndEvent end;
            end.status = "succeeded";
            end.step = steps;
            end.t = now();
            out(encodeEvent(end));
        }
        return 0;
    }
    if (mode == "exit" || mode == "kill") {
        if (rank == 1) {
            sleepFor(0.2);
            if (mode == "kill")
                std::raise(SIGKILL);
            return code;
        }
        sleepFor(60); // the launcher kills the others
        return 0;
    }
    if (mode == "stop" || mode == "chatty-stop") {
        out("rank " + std::to_string(rank) + " waiting for SIGUSR1");
        const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        for (int i = 0; !g_usr1 && std::chrono::steady_clock::now() < give_up; ++i) {
            sleepFor(0.01);
            // chatty-stop: a line every 50 ms meanwhile, as a training rank's telemetry keeps coming.
            if (mode == "chatty-stop" && i % 5 == 0)
                out("rank " + std::to_string(rank) + " still waiting (" + std::to_string(i) + ")");
        }
        if (rank == 0) {
            CheckpointEvent ck;
            ck.step = steps;
            ck.path = runDir + "/checkpoints/step-" + std::to_string(steps);
            ck.t = now();
            out(encodeEvent(ck));
            RunEndEvent end;
            end.status = "stopped";
            end.reason = "checkpointed at step " + std::to_string(steps);
            end.step = steps;
            end.t = now();
            out(encodeEvent(end));
        }
        return 0;
    }
    if (mode == "stubborn") {
        out("rank " + std::to_string(rank) + " waiting for SIGUSR1");
        sleepFor(60);
        return 0;
    }
    err("fake_worker: unknown --mode " + mode);
    return 2;
}
