#include "core/launch/SupervisorHeartbeat.h"

#include "core/launch/SupervisorAliveFile.h"
#include "core/util/Files.h"
#include "tests/support/Process.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <thread>

using namespace parallax;
using namespace std::chrono_literals;

TEST(SupervisorHeartbeat, TheFileIsInTheRunFolderFromTheStartUntilFinish) {
    parallax::testing::TempDir run;
    const std::string file = run.path() + "/supervisor.alive";
    EXPECT_EQ(supervisorAliveFile(run.path()), file);
    EXPECT_EQ(supervisorAliveFile(run.path() + "/"), file);
    {
        SupervisorHeartbeat heartbeat(run.path());
        EXPECT_EQ(heartbeat.path(), file);
        ASSERT_TRUE(isRegularFile(file));
        EXPECT_NE(readFile(file).find("pid " + std::to_string(getpid())), std::string::npos) << readFile(file);
        EXPECT_TRUE(heartbeat.failure().empty());
        heartbeat.finish();
        EXPECT_FALSE(pathExists(file));
        heartbeat.beat();
        EXPECT_FALSE(pathExists(file)) << "no beat after finish";
    }
    {
        SupervisorHeartbeat heartbeat(run.path());
        ASSERT_TRUE(pathExists(file));
    }
    EXPECT_FALSE(pathExists(file)) << "the destructor finishes";
}

TEST(SupervisorHeartbeat, BeatsRewriteTheFileAtMostEveryInterval) {
    parallax::testing::TempDir run;
    SupervisorHeartbeat heartbeat(run.path(), 200ms);
    const std::string first = readFile(heartbeat.path());
    EXPECT_EQ(heartbeat.beats(), 1);
    for (int i = 0; i < 20; ++i)
        heartbeat.beat();
    EXPECT_EQ(heartbeat.beats(), 1) << "calls before the interval write nothing";
    EXPECT_EQ(readFile(heartbeat.path()), first);

    std::this_thread::sleep_for(250ms);
    heartbeat.beat();
    EXPECT_EQ(heartbeat.beats(), 2);
    const std::string second = readFile(heartbeat.path());
    EXPECT_NE(second, first) << "each beat changes what the ranks read";
    heartbeat.beat();
    EXPECT_EQ(readFile(heartbeat.path()), second);
}

TEST(SupervisorHeartbeat, AFolderItCannotWriteIsNamed) {
    try {
        SupervisorHeartbeat heartbeat("/nonexistent/runs/12");
        FAIL() << "expected std::runtime_error";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("/nonexistent/runs/12/supervisor.alive"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("No such file or directory"), std::string::npos) << e.what();
    }
}

TEST(SupervisorHeartbeat, AFailedBeatIsKeptAndTheNextOneTriesAgain) {
    parallax::testing::TempDir run;
    SupervisorHeartbeat heartbeat(run.path(), 10ms);
    removeAll(run.path());
    std::this_thread::sleep_for(20ms);
    heartbeat.beat();
    EXPECT_FALSE(heartbeat.failure().empty());
    createDirectories(run.path());
    std::this_thread::sleep_for(20ms);
    heartbeat.beat();
    EXPECT_TRUE(heartbeat.failure().empty()) << heartbeat.failure();
    EXPECT_TRUE(pathExists(heartbeat.path()));
}
