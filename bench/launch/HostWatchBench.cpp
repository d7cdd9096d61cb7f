// What watching N hosts costs the supervisor (HostWatch): an ssh master per host and a probe
// (`ssh -S ctl host true`) of each every 2 s, spread over the period, polled on every turn of a loop
// that turns about 2,000 times a second, as the supervising loop does at 1,024 ranks. A stand-in
// `ssh` first on PATH answers at once (a master waits until it is ended, a probe exits 0), so the
// figures are the supervisor's own: its CPU over the run (its process alone, not the children), the
// longest and the 99th-percentile poll() call (what a poll holds the loop's lines back), the probes
// started and answered, and how many hosts answered. The first poll, which starts every host's
// master, is given apart.
//
//   bench_host_watch [--hosts N[,N...]] [--seconds S]   (defaults: 32,128,256 hosts, 20 s)

#include "core/launch/HostWatch.h"
#include "core/spec/ClusterProfile.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

double cpuSeconds() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

double percentile(std::vector<double> v, double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[static_cast<size_t>(p * double(v.size() - 1))];
}

[[noreturn]] void usage(const std::string& problem) {
    std::fprintf(stderr, "bench_host_watch: %s\nusage: bench_host_watch [--hosts N[,N...]] [--seconds S]\n",
                 problem.c_str());
    std::exit(2);
}

// A stand-in ssh: a master (-M) stays until it is ended; anything else answers at once.
void writeStandInSsh(const fs::path& bin) {
    fs::create_directories(bin);
    const fs::path ssh = bin / "ssh";
    std::ofstream(ssh) << "#!/bin/sh\nfor a in \"$@\"; do [ \"$a\" = -M ] && exec sleep 100000; done\nexit 0\n";
    fs::permissions(ssh, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                             fs::perms::others_read | fs::perms::others_exec);
}

struct Row {
    int hosts = 0;
    double cores = 0, pollMaxMs = 0, pollP99Ms = 0, firstMs = 0;
    int64_t polls = 0, looks = 0;
    int answered = 0;
};

Row watch(int hosts, double seconds, const fs::path& folder) {
    parallax::ClusterProfile cluster;
    for (int i = 0; i < hosts; ++i) cluster.hosts.push_back("node" + std::to_string(i));
    const fs::path control = folder / ("ctl-" + std::to_string(hosts));
    fs::create_directories(control);
    Row row;
    row.hosts = hosts;
    std::vector<double> pollMs;
    const double cpuBefore = cpuSeconds();
    {
        parallax::HostWatch w(cluster, control.string());
        const Clock::time_point end = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                         std::chrono::duration<double>(seconds));
        while (Clock::now() < end) {
            const Clock::time_point t0 = Clock::now();
            w.poll();
            pollMs.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
            std::this_thread::sleep_for(std::chrono::microseconds(500)); // the loop's other work
        }
        row.looks = w.looks();
        for (const parallax::HostWatch::Host& h : w.hosts()) row.answered += h.answered_once ? 1 : 0;
    }
    row.cores = (cpuSeconds() - cpuBefore) / seconds;
    row.polls = static_cast<int64_t>(pollMs.size());
    // The first poll starts every host's master at once; the rest are the steady cost.
    row.firstMs = pollMs.empty() ? 0 : pollMs.front();
    if (!pollMs.empty()) pollMs.erase(pollMs.begin());
    row.pollMaxMs = percentile(pollMs, 1.0);
    row.pollP99Ms = percentile(pollMs, 0.99);
    return row;
}

} // namespace

int main(int argc, char** argv) {
    std::vector<int> counts = {32, 128, 256};
    double seconds = 20;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (i + 1 >= argc) usage(a + " needs a value");
        const std::string v = argv[++i];
        if (a == "--hosts") {
            counts.clear();
            size_t from = 0;
            while (from <= v.size()) {
                const size_t comma = v.find(',', from);
                counts.push_back(std::atoi(v.substr(from, comma - from).c_str()));
                if (counts.back() < 1) usage("--hosts takes counts of at least 1");
                if (comma == std::string::npos) break;
                from = comma + 1;
            }
        } else if (a == "--seconds") {
            seconds = std::atof(v.c_str());
            if (seconds <= 0) usage("--seconds takes a positive number");
        } else {
            usage("unknown argument " + a);
        }
    }
    char tmpl[] = "/tmp/parallax-host-watch-XXXXXX";
    if (!mkdtemp(tmpl)) usage("cannot make a temporary folder");
    const fs::path folder = tmpl;
    writeStandInSsh(folder / "bin");
    const char* path = std::getenv("PATH");
    setenv("PATH", ((folder / "bin").string() + ":" + (path ? path : "/usr/bin:/bin")).c_str(), 1);

    std::printf("HostWatch with a stand-in ssh (probes every 2 s, polled about 2,000 times a second), %.0f s each\n\n",
                seconds);
    std::printf("| hosts | supervisor cores | first poll ms | later poll() p99 / max ms | polls | looks | hosts answered |\n");
    std::printf("|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int n : counts) {
        const Row r = watch(n, seconds, folder);
        std::printf("| %d | %.3f | %.1f | %.3f / %.2f | %lld | %lld | %d of %d |\n", r.hosts, r.cores, r.firstMs,
                    r.pollP99Ms, r.pollMaxMs,
                    static_cast<long long>(r.polls), static_cast<long long>(r.looks), r.answered, r.hosts);
        std::fflush(stdout);
    }
    std::error_code ec;
    fs::remove_all(folder, ec);
    return 0;
}
