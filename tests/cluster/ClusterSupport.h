#pragma once

// What the cluster tests share: a cluster profile for the test hosts, small specs, a run through
// parallax-cli, and what is left on a host.

#include "core/store/RunStore.h"
#include "tests/support/Process.h"
#include "tests/support/TestHosts.h"
#include "tests/support/WaitUntil.h"

#include <atomic>
#include <chrono>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace parallax::testing {

inline std::string cli() { return buildDir() + "/app/parallax-cli"; }

inline std::string tomlString(const std::string& text) {
    std::string out = "\"";
    for (char c : text) {
        if (c == '"' || c == '\\')
            out.push_back('\\');
        out.push_back(c);
    }
    return out + "\"";
}

inline std::string tomlArray(const std::vector<std::string>& items) {
    std::string out = "[";
    for (const std::string& item : items)
        out += (out.size() > 1 ? ", " : "") + tomlString(item);
    return out + "]";
}

// A cluster profile for the test hosts: ssh with the fixture's config, and Open MPI's out-of-band
// and TCP transports on the bridge's subnet (see TestHosts::mpirunArgs for why each is needed).
inline std::string clusterProfile(const TestHosts& hosts, int slotsPerHost) {
    std::vector<std::string> entries;
    for (const std::string& name : hosts.names())
        entries.push_back(name + ":" + std::to_string(slotsPerHost));
    return "hosts = " + tomlArray(entries) + "\n[ssh]\nconfig_file = " + tomlString(hosts.sshConfigPath()) +
           "\n[mca]\noob_tcp_if_include = " + tomlString(hosts.subnet()) +
           "\nbtl_tcp_if_include = " + tomlString(hosts.subnet()) + "\n";
}

struct Layout {
    int dp = 1;
    int pp = 1;
};

inline void PrintTo(const Layout& layout, std::ostream* os) {
    *os << "dp" << layout.dp << " pp" << layout.pp;
}

// The tiny gpt with four blocks (two pipeline stages of two), on synthetic data. `launch` is the
// [launch] table's lines.
inline std::string tinySpec(const std::string& name, Layout layout, const std::string& launch) {
    return "name = " + tomlString(name) +
           "\n[model]\nkind = \"gpt\"\npreset = \"tiny\"\nlayers = 4\n"
           "[data]\nkind = \"synthetic\"\n"
           "[train]\nsteps = 6\nglobal_batch = 8\nmicro_batch = 2\nlr = 1e-3\nwarmup = 2\nseed = 1234\n"
           "grad_clip = 1.0\ncheckpoint_every = 0\n"
           "[parallel]\ndp = " + std::to_string(layout.dp) + "\npp = " + std::to_string(layout.pp) +
           "\n[launch]\n" + launch + "[telemetry]\ndevice_sample_ms = 1000\nspan_every = 0\n";
}

// tinySpec as dp=2 in a Slurm batch job of `steps` steps.
inline std::string batchSpec(const std::string& name, int steps) {
    std::string text = tinySpec(name, {2, 1}, "target = \"slurm\"\nslurm_mode = \"batch\"\n");
    text.replace(text.find("steps = 6"), 9, "steps = " + std::to_string(steps));
    return text;
}

struct CliRun {
    ProcessResult result;
    std::optional<RunRecord> record;
    std::vector<double> losses;
    std::vector<std::string> runStartHosts; // per rank
    std::string show;
};

// Runs the spec through `parallax-cli run`, calling `whileRunning` every 50 ms until it ends.
inline CliRun runThroughCli(const std::string& folder, const std::string& name, const std::string& specText,
                     const std::function<void()>& whileRunning = [] {}) {
    const std::string store = folder + "/parallax.db";
    const std::string spec = folder + "/" + name + ".toml";
    std::ofstream(spec) << specText;
    const std::string cli = buildDir() + "/app/parallax-cli";
    CliRun run;
    BackgroundProcess process = startProcess({cli, "--store", store, "run", spec}, folder + "/" + name + ".out");
    std::atomic<bool> ended{false};
    std::thread watcher([&] {
        while (!ended) {
            whileRunning();
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
    });
    run.result.exitCode = process.wait();
    ended = true;
    watcher.join();
    run.result.output = process.output();
    RunStore db(store);
    run.record = db.findRun(name);
    if (run.record) {
        for (const StepEvent& step : db.metrics(run.record->id))
            run.losses.push_back(step.loss);
        if (const std::optional<RunStartEvent> start = db.runStart(run.record->id))
            run.runStartHosts = start->hosts;
        run.show = runProcess({cli, "--store", store, "show", name}).output;
    }
    return run;
}

// dp=2, one rank per host, long enough to be disturbed while it trains.
inline std::string longSpec(const std::string& name, const std::string& profile, int hostTimeout) {
    return "name = " + tomlString(name) +
           "\n[model]\nkind = \"gpt\"\npreset = \"tiny\"\n[data]\nkind = \"synthetic\"\n"
           "[train]\nsteps = 100000\nglobal_batch = 4\nmicro_batch = 2\nlr = 1e-3\nwarmup = 2\ncheckpoint_every = 0\n"
           "[parallel]\ndp = 2\n[launch]\ntarget = \"hosts\"\ncluster = " + tomlString(profile) +
           "\nhost_timeout_s = " + std::to_string(hostTimeout) + "\n[telemetry]\ndevice_sample_ms = 1000\n";
}

// The run `name` of `store` once it has stored `steps` steps.
inline std::optional<RunRecord> waitForSteps(const std::string& store, const std::string& name, size_t steps) {
    std::optional<RunRecord> found;
    waitUntil(
        [&] {
            try {
                RunStore db(store);
                found = db.findRun(name);
                return found && db.metrics(found->id).size() >= steps;
            } catch (const StoreError&) {
                return false;
            }
        },
        std::chrono::seconds(120));
    return found;
}

inline std::string commands(const std::vector<HostProcess>& processes) {
    std::string out;
    for (const HostProcess& p : processes)
        out += "  " + std::to_string(p.pid) + " " + p.command + "\n";
    return out;
}

// Only the host's sshd listener is left: no session, orted or worker of the run.
inline bool onlySshdLeft(const TestHosts& hosts, int i) {
    const std::vector<HostProcess> left = hosts.processes(i);
    return left.size() == 1 && left.front().pid == hosts.sshdPid(i);
}

} // namespace parallax::testing
