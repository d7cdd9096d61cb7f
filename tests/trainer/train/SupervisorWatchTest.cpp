#include "trainer/train/SupervisorWatch.h"

#include "core/util/Files.h"
#include "core/util/HostName.h"
#include "tests/support/Process.h"
#include "tests/support/WaitUntil.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <thread>

using namespace parallax;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

std::string aliveFile(const parallax::testing::TempDir& run) { return run.path() + "/supervisor.alive"; }

// What the supervisor's heartbeat does, one beat.
void beat(const std::string& file, int n) {
    std::ofstream(file, std::ios::trunc) << "parallax supervisor pid 1 beat " << n << "\n";
}

// Records the handler's calls.
struct Lost {
    std::mutex mutex;
    std::string message;
    std::atomic<int> calls{0};
    Clock::time_point at;
    SupervisorWatch::LostHandler handler() {
        return [this](const std::string& m) {
            std::lock_guard<std::mutex> lock(mutex);
            message = m;
            at = Clock::now();
            ++calls;
        };
    }
    bool waitForCall(std::chrono::milliseconds timeout) {
        return parallax::testing::waitUntil([this] { return calls > 0; }, timeout, 5ms);
    }
};

} // namespace

TEST(SupervisorWatch, AFileThatNeverAppearedLeavesTheRankAlone) {
    parallax::testing::TempDir run;
    Lost lost;
    {
        SupervisorWatch watch(run.path(), 0, 100ms, lost.handler(), 10ms);
        std::this_thread::sleep_for(500ms);
    }
    EXPECT_EQ(lost.calls, 0) << lost.message;
}

TEST(SupervisorWatch, ABeatingFileKeepsTheRankAndASilentOneEndsItAfterTheTimeout) {
    parallax::testing::TempDir run;
    beat(aliveFile(run), 0);
    Lost lost;
    // The timeout is twelve beats long, so that a busy machine delaying a beat does not end the rank.
    SupervisorWatch watch(run.path(), 3, 1200ms, lost.handler(), 20ms);
    // Beats for three timeouts: no call.
    for (int i = 1; i <= 36; ++i) {
        std::this_thread::sleep_for(100ms);
        beat(aliveFile(run), i);
    }
    EXPECT_EQ(lost.calls, 0) << lost.message;
    const Clock::time_point silentFrom = Clock::now();
    ASSERT_TRUE(lost.waitForCall(3s));
    const auto after = std::chrono::duration_cast<std::chrono::milliseconds>(lost.at - silentFrom);
    EXPECT_GE(after.count(), 1100) << "the timeout runs from the last change the watch saw";
    EXPECT_LE(after.count(), 3000);
    EXPECT_EQ(lost.message, "parallax-worker rank 3 on " + hostName() +
                                ": the supervisor of this run stopped answering (" + aliveFile(run) +
                                " unchanged for 1.2 s); exiting");
    std::this_thread::sleep_for(100ms);
    EXPECT_EQ(lost.calls, 1) << "once";
}

TEST(SupervisorWatch, ARemovedFileEndsTheRankWithoutWaitingForTheTimeout) {
    parallax::testing::TempDir run;
    beat(aliveFile(run), 0);
    Lost lost;
    SupervisorWatch watch(run.path(), 1, 60s, lost.handler(), 20ms);
    std::this_thread::sleep_for(100ms);
    ASSERT_EQ(::unlink(aliveFile(run).c_str()), 0);
    ASSERT_TRUE(lost.waitForCall(2s));
    EXPECT_NE(lost.message.find("rank 1 on "), std::string::npos) << lost.message;
    EXPECT_NE(lost.message.find(aliveFile(run) + " was removed"), std::string::npos) << lost.message;
}

TEST(SupervisorWatch, AFileThatAppearsLateIsWatchedFromThen) {
    parallax::testing::TempDir run;
    Lost lost;
    SupervisorWatch watch(run.path(), 0, 200ms, lost.handler(), 10ms);
    std::this_thread::sleep_for(300ms);
    EXPECT_EQ(lost.calls, 0);
    beat(aliveFile(run), 0);
    ASSERT_TRUE(lost.waitForCall(2s));
    EXPECT_NE(lost.message.find("unchanged for 0.2 s"), std::string::npos) << lost.message;
}

TEST(SupervisorWatch, StopsPromptlyWhenTheRankEnds) {
    parallax::testing::TempDir run;
    beat(aliveFile(run), 0);
    const Clock::time_point start = Clock::now();
    {
        SupervisorWatch watch(run.path(), 0, 30s); // default ending, never reached
        std::this_thread::sleep_for(50ms);
    }
    EXPECT_LT(Clock::now() - start, 900ms) << "the destructor does not wait for the next poll";
}

TEST(SupervisorWatch, TheTimeoutComesFromTheEnvironment) {
    unsetenv("PARALLAX_SUPERVISOR_TIMEOUT_S");
    EXPECT_EQ(SupervisorWatch::timeoutFromEnvironment(), 30s);
    setenv("PARALLAX_SUPERVISOR_TIMEOUT_S", "2.5", 1);
    EXPECT_EQ(SupervisorWatch::timeoutFromEnvironment(), 2500ms);
    setenv("PARALLAX_SUPERVISOR_TIMEOUT_S", "soon", 1);
    EXPECT_EQ(SupervisorWatch::timeoutFromEnvironment(), 30s);
    setenv("PARALLAX_SUPERVISOR_TIMEOUT_S", "-1", 1);
    EXPECT_EQ(SupervisorWatch::timeoutFromEnvironment(), 30s);
    unsetenv("PARALLAX_SUPERVISOR_TIMEOUT_S");
}

TEST(SupervisorWatchDeathTest, TheDefaultEndingSaysWhyAndExitsTheProcess) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    parallax::testing::TempDir run;
    beat(aliveFile(run), 0);
    EXPECT_EXIT(
        {
            SupervisorWatch watch(run.path(), 5, 200ms);
            std::this_thread::sleep_for(10s);
            std::exit(0);
        },
        ::testing::ExitedWithCode(SupervisorWatch::kExitCode),
        "parallax-worker rank 5 on .*: the supervisor of this run stopped answering \\(.*supervisor.alive unchanged "
        "for 0.2 s\\); exiting");
}
