// What starting a short process costs the supervisor, against the memory it holds: the supervisor
// starts an ssh probe for every host every few seconds (HostWatch), each through
// LauncherProcess::start, while the rows of a large run pass through it. The table gives, for a
// process holding 64 MiB and then 1 GiB of touched memory, the median and p95 time a thread spends
// in LauncherProcess::start of /bin/true, and the same for fork + exec + waiting for the exec, the
// way start() worked before (its cost grows with the page tables fork copies).
//
//   bench_spawn [--starts N]   (N starts per row; default 300)

#include "core/launch/LauncherProcess.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double percentile(std::vector<double> v, double p) {
    std::sort(v.begin(), v.end());
    return v[static_cast<size_t>(p * double(v.size() - 1))];
}

// fork, exec /bin/true in the child, and wait in the parent until the exec happened (a
// close-on-exec pipe reads end of file), then reap: start()'s old path.
double forkStartMs() {
    int status[2];
    if (pipe2(status, O_CLOEXEC) != 0) std::exit(1);
    const Clock::time_point t0 = Clock::now();
    const pid_t pid = fork();
    if (pid == 0) {
        execl("/bin/true", "true", static_cast<char*>(nullptr));
        _exit(127);
    }
    ::close(status[1]);
    char byte;
    while (::read(status[0], &byte, 1) < 0) {
    }
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    ::close(status[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    return ms;
}

double launcherStartMs() {
    parallax::LauncherProcess p;
    const Clock::time_point t0 = Clock::now();
    if (p.start({"/bin/true"}, {}) != 0) std::exit(1);
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    while (!p.tryWait()) usleep(200);
    return ms;
}

} // namespace

int main(int argc, char** argv) {
    int starts = 300;
    for (int i = 1; i + 1 < argc; i += 2)
        if (std::strcmp(argv[i], "--starts") == 0) starts = std::atoi(argv[i + 1]);
    std::printf("| memory held | fork + exec: median / p95 ms | LauncherProcess::start: median / p95 ms |\n");
    std::printf("|---:|---:|---:|\n");
    std::vector<char> held;
    for (const size_t mib : {size_t(64), size_t(1024)}) {
        held.assign(mib << 20, 1); // touched: resident, with page tables to copy
        std::vector<double> forked, launched;
        for (int i = 0; i < starts; ++i) {
            forked.push_back(forkStartMs());
            launched.push_back(launcherStartMs());
        }
        std::printf("| %zu MiB | %.3f / %.3f | %.3f / %.3f |\n", mib, percentile(forked, 0.5), percentile(forked, 0.95),
                    percentile(launched, 0.5), percentile(launched, 0.95));
    }
    return held.empty() ? 1 : 0;
}
