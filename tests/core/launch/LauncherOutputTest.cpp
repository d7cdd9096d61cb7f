// A launcher here (a shell standing in for mpirun): its output read into the store as it comes and
// drained at its end, and a stop reaching it through LauncherControl.
#include "core/launch/LauncherControl.h"
#include "core/launch/LauncherOutput.h"
#include "core/store/BatchedWriter.h"

#include "tests/support/Process.h"

#include <gtest/gtest.h>

#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <thread>

using namespace parallax;
using namespace std::chrono_literals;

namespace {

struct Launch {
    Launch() : store(dir.path() + "/parallax.db"), writer(store, runId()), router(writer, LauncherFormat::OpenMpi,
                                                                                  "host1", true),
               output(launcher, router), control(launcher, "sh") {}
    int64_t runId() {
        NewRun nr;
        nr.name = "launched";
        return run = store.createRun(nr);
    }
    // Reads until `lines` rows are with the writer or the launcher's pipes close.
    void readFor(std::chrono::milliseconds limit) {
        const auto end = std::chrono::steady_clock::now() + limit;
        while (std::chrono::steady_clock::now() < end && (launcher.stdoutFd() >= 0 || launcher.stderrFd() >= 0)) {
            std::vector<pollfd> fds;
            output.addTo(fds);
            if (::poll(fds.data(), fds.size(), 50) > 0)
                output.read(fds);
            if (writer.pendingRows() >= 2)
                return;
        }
    }
    std::vector<LogRow> rows() {
        writer.flush();
        return store.logs(run, LogQuery{});
    }

    parallax::testing::TempDir dir;
    RunStore store;
    int64_t run = 0;
    BatchedWriter writer;
    OutputRouter router;
    LauncherProcess launcher;
    LauncherOutput output;
    LauncherControl control;
};

} // namespace

TEST(LauncherOutput, BothPipesAreReadAsTheyComeAndDrainedAtTheEnd) {
    Launch l;
    ASSERT_EQ(l.launcher.start({"sh", "-c", "echo '[1,0]<stdout>:from rank 0'; echo launcher-says >&2; sleep 30; "
                                            "echo never"},
                               {}),
              0);
    l.readFor(10s);
    EXPECT_EQ(l.writer.pendingRows(), 2u);
    EXPECT_TRUE(l.control.launched());
    EXPECT_EQ(l.control.name(), "sh");
    l.control.terminate(); // SIGTERM ends the shell
    for (int i = 0; i < 100 && !l.launcher.tryWait(); ++i) std::this_thread::sleep_for(50ms);
    ASSERT_TRUE(l.launcher.status());
    EXPECT_TRUE(WIFSIGNALED(*l.launcher.status()));
    l.control.killAll(); // the sleep it left, which holds the pipes open
    const auto drainStart = std::chrono::steady_clock::now();
    l.output.drain(5s);
    EXPECT_LT(std::chrono::steady_clock::now() - drainStart, 4s) << "the pipes closed once nothing held them";
    EXPECT_LT(l.launcher.stdoutFd(), 0);
    EXPECT_LT(l.launcher.stderrFd(), 0);
    l.router.finish(0);
    const std::vector<LogRow> rows = l.rows();
    ASSERT_EQ(rows.size(), 2u);
    std::vector<std::string> messages{rows[0].message, rows[1].message};
    std::sort(messages.begin(), messages.end());
    EXPECT_EQ(messages, (std::vector<std::string>{"from rank 0", "launcher-says"}));
}

TEST(LauncherOutput, NothingIsLaunchedBeforeTheLauncherStarts) {
    Launch l;
    EXPECT_FALSE(l.control.launched());
    EXPECT_FALSE(l.control.queued());
    std::vector<pollfd> fds;
    l.output.addTo(fds);
    EXPECT_TRUE(fds.empty());
}
