#pragma once

// What the end-to-end tests of a run's processes share: the executables, waiting, and the
// processes of a run found through /proc.

#include "core/store/RunStore.h"
#include "tests/support/Process.h"
#include "tests/support/WaitUntil.h"

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace parallax::testing {

inline std::string cliExecutable() { return buildDir() + "/app/parallax-cli"; }
inline std::string workerExecutable() { return buildDir() + "/app/parallax-worker"; }

// The run called `name` once `ready` holds for it; nullopt on timeout (or before the supervisor
// has created the store).
inline std::optional<RunRecord> waitForRun(const std::string& store, const std::string& name,
                                           const std::function<bool(RunStore&, const RunRecord&)>& ready,
                                           std::chrono::milliseconds timeout) {
    std::optional<RunRecord> found;
    waitUntil(
        [&] {
            try {
                RunStore db(store);
                const std::optional<RunRecord> run = db.findRun(name);
                if (run && ready(db, *run))
                    found = run;
                return found.has_value();
            } catch (const StoreError&) {
                return false;
            }
        },
        timeout);
    return found;
}

inline std::string procFile(pid_t pid, const std::string& what) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/" + what, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The command name of a process ("mpirun", "parallax-worker"), without the newline.
inline std::string commandName(pid_t pid) {
    std::string comm = procFile(pid, "comm");
    if (!comm.empty() && comm.back() == '\n')
        comm.pop_back();
    return comm;
}

// The live processes whose command line names the run's folder (its mpirun and workers).
inline std::vector<pid_t> runProcesses(const std::string& runDir, const std::string& name) {
    std::vector<pid_t> out;
    for (pid_t pid : processesMatching(runDir))
        if (commandName(pid) == name)
            out.push_back(pid);
    return out;
}

// A dp=2 run of the tiny gpt on synthetic data; `train` and `telemetry` are the lines of those
// tables, `extra` more tables.
inline std::string tinyGptSpec(const std::string& name, const std::string& train, const std::string& telemetry,
                               const std::string& extra = "") {
    return "name = \"" + name + "\"\n[model]\nkind = \"gpt\"\npreset = \"tiny\"\n[data]\nkind = \"synthetic\"\n" +
           "[train]\n" + train + "[parallel]\ndp = 2\n[telemetry]\n" + telemetry + extra;
}

// Long enough to be stopped or killed while it trains, with telemetry on every step.
inline std::string longTinyGptSpec(const std::string& name, const std::string& extra = "") {
    return tinyGptSpec(name, "steps = 100000\nglobal_batch = 8\nmicro_batch = 4\nlr = 1e-3\nwarmup = 5\ncheckpoint_every = 0\n",
                       "device_sample_ms = 200\n", extra);
}

// The pid of world rank `rank` among the workers whose command line names `dir` (a run's folder, or
// a folder that holds the runs), from its Open MPI environment; 0 when none runs.
inline pid_t rankPid(const std::string& dir, int rank) {
    for (pid_t pid : runProcesses(dir, "parallax-worker"))
        if (procFile(pid, "environ").find("OMPI_COMM_WORLD_RANK=" + std::to_string(rank) + '\0') != std::string::npos)
            return pid;
    return 0;
}

// World rank `rank` of the runs under `dir` at half speed while this lives, the way a slower or
// shared device is: stopped (SIGSTOP) and continued in turns of 10 ms, shorter than a unit's forward
// (with turns of 40 ms, a unit of a few ms could run whole between stops and be timed at full
// speed). The rank is looked for again every few turns, so that each of several runs in turn is
// slowed (a probe, then the runs).
class HalfSpeedRank {
public:
    HalfSpeedRank(std::string dir, int rank)
        : m_thread([this, dir = std::move(dir), rank] {
              pid_t victim = 0;
              for (int turn = 0; m_slowing; ++turn) {
                  if (turn % 16 == 0 || victim == 0) victim = rankPid(dir, rank);
                  if (victim > 0) ::kill(victim, SIGSTOP);
                  std::this_thread::sleep_for(std::chrono::milliseconds(10));
                  if (victim > 0) ::kill(victim, SIGCONT);
                  std::this_thread::sleep_for(std::chrono::milliseconds(10));
              }
          }) {}
    ~HalfSpeedRank() {
        m_slowing = false;
        m_thread.join();
    }
    HalfSpeedRank(const HalfSpeedRank&) = delete;
    HalfSpeedRank& operator=(const HalfSpeedRank&) = delete;

private:
    std::atomic<bool> m_slowing{true};
    std::thread m_thread;
};

} // namespace parallax::testing
