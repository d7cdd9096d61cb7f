// Stop requests turned into SIGUSR1 -> SIGTERM -> SIGKILL on a fake launch, on a clock the test sets.
#include "core/launch/StopEscalation.h"

#include "tests/core/launch/RecordedNotices.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <csignal>
#include <string>
#include <vector>

using namespace parallax;
using namespace std::chrono_literals;

namespace {

// Records what the escalation does to the launch, as "signal 10", "terminate", "kill ranks", "kill all".
class FakeLaunch : public LaunchControl {
public:
    bool started = true;
    bool pending = false;
    std::vector<std::string> done;

    bool launched() const override { return started; }
    bool queued() const override { return pending; }
    std::string name() const override { return "mpirun"; }
    void signalRanks(int signal) override { done.push_back("signal " + std::to_string(signal)); }
    void terminate() override { done.push_back("terminate"); }
    void killRanks() override { done.push_back("kill ranks"); }
    void killAll() override { done.push_back("kill all"); }
};

using Notices = parallax::testing::RecordedNotices;

using Clock = StopEscalation::Clock;

} // namespace

TEST(StopEscalation, ARequestAsksTheRanksFirstThenTerminatesThenKillsAsTheGracesRunOut) {
    FakeLaunch launch;
    Notices notices;
    StopEscalation stops(launch, notices, 2000ms, 500ms);
    const Clock::time_point t0 = Clock::now();
    stops.request(SIGTERM);
    ASSERT_TRUE(stops.readRequests(t0));
    EXPECT_EQ(stops.phase(), StopPhase::Graceful);
    EXPECT_EQ(stops.signal(), SIGTERM);
    EXPECT_EQ(launch.done, std::vector<std::string>{"signal " + std::to_string(SIGUSR1)});
    ASSERT_EQ(notices.said.size(), 1u);
    EXPECT_EQ(notices.said[0], "warn: stop requested (SIGTERM): SIGUSR1 to mpirun asks the ranks to checkpoint and "
                               "stop; SIGTERM in 2 s");
    EXPECT_EQ(stops.timeLeft(t0 + 500ms), 1500ms);

    stops.tick(t0 + 1999ms);
    EXPECT_EQ(stops.phase(), StopPhase::Graceful);
    stops.tick(t0 + 2000ms);
    EXPECT_EQ(stops.phase(), StopPhase::Terminate);
    EXPECT_EQ(launch.done.back(), "terminate");
    EXPECT_EQ(notices.said.back(), "warn: the ranks did not stop within 2 s: SIGTERM to mpirun; SIGKILL in 0.5 s");

    stops.tick(t0 + 2500ms);
    EXPECT_EQ(stops.phase(), StopPhase::Kill);
    EXPECT_EQ(launch.done.back(), "kill ranks");
    EXPECT_EQ(notices.said.back(), "warn: mpirun did not exit within 0.5 s: SIGKILL to every process of the launch");
    EXPECT_FALSE(stops.timeLeft(t0 + 3000ms));
    stops.tick(t0 + 10s);
    EXPECT_EQ(launch.done.size(), 3u);
}

TEST(StopEscalation, EachFurtherRequestEscalatesAtOnce) {
    FakeLaunch launch;
    Notices notices;
    StopEscalation stops(launch, notices, 120s, 120s);
    stops.request(SIGINT);
    stops.request(SIGTERM);
    ASSERT_TRUE(stops.readRequests(Clock::now()));
    EXPECT_EQ(stops.phase(), StopPhase::Terminate);
    EXPECT_EQ(stops.signal(), SIGINT); // the first request names the stop
    EXPECT_EQ(notices.said.back(), "warn: stop requested again: SIGTERM to mpirun; SIGKILL in 120 s");
    stops.request(SIGINT);
    stops.readRequests(Clock::now());
    EXPECT_EQ(stops.phase(), StopPhase::Kill);
    EXPECT_EQ(notices.said.back(), "warn: stop requested again: SIGKILL to every process of the launch");
}

TEST(StopEscalation, ARequestBeforeTheLaunchIsKeptWithoutSignallingAnything) {
    FakeLaunch launch;
    launch.started = false;
    Notices notices;
    StopEscalation stops(launch, notices, 1s, 1s);
    EXPECT_FALSE(stops.readRequests(Clock::now()));
    // As the signal handler does: a byte on the pipe.
    const unsigned char byte = SIGHUP;
    ASSERT_EQ(::write(stops.requestFd(), &byte, 1), 1);
    EXPECT_TRUE(stops.readRequests(Clock::now()));
    EXPECT_EQ(stops.signal(), SIGHUP);
    EXPECT_EQ(stops.phase(), StopPhase::None);
    EXPECT_TRUE(launch.done.empty());
    stops.begin(SIGTERM, Clock::now()); // nothing launched: nothing to begin
    EXPECT_EQ(stops.phase(), StopPhase::None);
}

TEST(StopEscalation, AJobStillInTheQueueIsCancelledAtOnce) {
    FakeLaunch launch;
    launch.pending = true;
    Notices notices;
    StopEscalation stops(launch, notices, 120s, 10s);
    stops.begin(SIGTERM, Clock::now());
    EXPECT_EQ(stops.phase(), StopPhase::Kill);
    EXPECT_EQ(launch.done, std::vector<std::string>{"kill all"});
    EXPECT_EQ(notices.said.back(), "warn: stop requested (SIGTERM) while mpirun waits in the queue: it is cancelled");
}

TEST(StopEscalation, AFlightRecorderDumpEndsEverythingAfterItsTime) {
    FakeLaunch launch;
    Notices notices;
    StopEscalation stops(launch, notices, 120s, 10s);
    const Clock::time_point t0 = Clock::now();
    stops.dumpThenEnd(t0, 3s);
    EXPECT_EQ(launch.done, std::vector<std::string>{"signal " + std::to_string(SIGUSR2)});
    EXPECT_TRUE(stops.stopping());
    stops.tick(t0 + 2900ms);
    EXPECT_EQ(launch.done.size(), 1u);
    stops.tick(t0 + 3s);
    EXPECT_EQ(stops.phase(), StopPhase::Kill);
    EXPECT_EQ(launch.done.back(), "kill all");
    EXPECT_TRUE(notices.said.empty()); // the hang's notice said why
    stops.tick(t0 + 6s);
    EXPECT_EQ(launch.done.size(), 2u);
}

TEST(StopEscalation, ARequestAfterTheEndIsTakenWithoutActing) {
    FakeLaunch launch;
    Notices notices;
    StopEscalation stops(launch, notices, 1s, 1s);
    EXPECT_FALSE(stops.takeRequest());
    stops.request(SIGINT);
    EXPECT_TRUE(stops.takeRequest());
    EXPECT_TRUE(launch.done.empty());
    EXPECT_EQ(stops.phase(), StopPhase::None);
}
