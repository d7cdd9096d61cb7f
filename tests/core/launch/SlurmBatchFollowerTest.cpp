// Following a run's Slurm job through a fake of the Slurm commands, with a store in a temp folder.
#include "core/launch/OutputRouter.h"
#include "core/launch/SlurmBatchFollower.h"
#include "core/store/BatchedWriter.h"

#include "tests/core/launch/RecordedNotices.h"
#include "tests/support/Process.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <deque>
#include <fstream>

using namespace parallax;
using namespace std::chrono_literals;
using Clock = SlurmBatchFollower::Clock;

namespace {

// Answers queries from a script of states, and records what was asked of it.
class FakeSlurm : public SlurmControl {
public:
    std::deque<SlurmJobStatus> answers;
    std::vector<std::string> asked;

    SlurmJobStatus query(const std::string& jobId, std::chrono::milliseconds) override {
        asked.push_back("query " + jobId);
        if (answers.empty()) return {};
        SlurmJobStatus st = answers.front();
        if (answers.size() > 1) answers.pop_front();
        return st;
    }
    std::string submit(const std::vector<std::string>& submit, const std::map<std::string, std::string>&) override {
        asked.push_back("submit " + submit.back());
        return "12";
    }
    std::string signal(const std::string& jobId, const std::string& signal) override {
        asked.push_back("signal " + jobId + " " + signal);
        return {};
    }
    std::string cancel(const std::string& jobId) override {
        asked.push_back("cancel " + jobId);
        return "scancel: error: Kill job error on job id " + jobId;
    }
};

SlurmJobStatus status(const std::string& state, const std::string& reason = {}, int64_t place = 0) {
    SlurmJobStatus st;
    st.known = true;
    st.job.job_id = "12";
    st.job.state = state;
    st.job.reason = reason;
    st.job.queue_position = place;
    return st;
}

class Follower : public ::testing::Test {
protected:
    Follower() : store(dir.path() + "/parallax.db") {
        NewRun nr;
        nr.name = "batch";
        run = store.createRun(nr);
        runDir = dir.path() + "/run";
        ::mkdir(runDir.c_str(), 0700);
    }
    std::unique_ptr<SlurmBatchFollower> follower(bool batch = true) {
        return std::make_unique<SlurmBatchFollower>(store, run, runDir, "login1", batch, notices, slurm, 1s);
    }

    parallax::testing::TempDir dir;
    RunStore store;
    int64_t run = 0;
    std::string runDir;
    parallax::testing::RecordedNotices notices;
    FakeSlurm slurm;
};

} // namespace

TEST_F(Follower, ASubmittedJobIsRecordedWithItsScriptAndSaid) {
    auto f = follower();
    LaunchPlan plan;
    plan.submit = {"sbatch", "--parsable", runDir + "/job.sh"};
    plan.script = "#!/bin/sh\nexec srun worker\n";
    f->submit(plan);
    EXPECT_EQ(slurm.asked, std::vector<std::string>{"submit " + runDir + "/job.sh"});
    std::ifstream script(runDir + "/job.sh");
    EXPECT_EQ(std::string(std::istreambuf_iterator<char>(script), {}), plan.script);
    struct stat st {};
    ASSERT_EQ(::stat((runDir + "/job.sh").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u);
    const std::optional<SlurmJob> job = store.slurmJob(run);
    ASSERT_TRUE(job);
    EXPECT_EQ(job->job_id, "12");
    EXPECT_EQ(job->mode, SlurmMode::Batch);
    EXPECT_EQ(job->state, "PENDING");
    EXPECT_EQ(store.run(run)->supervisor_pid, static_cast<int64_t>(getpid()));
    EXPECT_NE(notices.last().find("submitted Slurm job 12 (sbatch --parsable "), std::string::npos) << notices.last();
    // One follower at a time: the submitter holds the lock.
    EXPECT_FALSE(follower()->takeFollowLock());
}

TEST_F(Follower, WhatSlurmSaysIsRecordedWhenItChangesAndTheRunRunsOnceTheJobDoes) {
    auto f = follower();
    SlurmJob submitted;
    submitted.job_id = "12";
    submitted.state = "PENDING";
    f->resume(submitted, 0);
    slurm.answers = {status("PENDING", "Priority", 2), status("PENDING", "Priority", 2), status("RUNNING"),
                     status("COMPLETED")};
    const Clock::time_point t0 = Clock::now();
    f->query(true, t0);
    EXPECT_EQ(notices.last(), "info: Slurm job 12: PENDING (Priority), place 2 in the queue");
    EXPECT_EQ(store.slurmJob(run)->reason, "Priority");
    EXPECT_EQ(store.run(run)->state, RunState::Queued);
    f->query(false, t0 + 500ms); // not due
    EXPECT_EQ(slurm.asked.size(), 1u);
    f->query(false, t0 + 1s); // the same again: nothing said
    EXPECT_EQ(notices.said.size(), 1u);
    f->query(true, t0 + 2s);
    EXPECT_EQ(notices.last(), "info: Slurm job 12: RUNNING");
    EXPECT_EQ(store.run(run)->state, RunState::Running);
    EXPECT_FALSE(f->queued());

    BatchedWriter writer(store, run);
    OutputRouter router(writer, LauncherFormat::Slurm, "login1", false);
    EXPECT_FALSE(f->over(router, t0 + 2s));
    f->query(true, t0 + 3s);
    EXPECT_TRUE(f->over(router, t0 + 3s));
}

TEST_F(Follower, AJobSlurmNoLongerKnowsIsOverAfterAMinuteOfSilence) {
    auto f = follower();
    SlurmJob submitted;
    submitted.job_id = "12";
    f->resume(submitted, 0);
    SlurmJobStatus gone;
    gone.error = "Invalid job id specified";
    slurm.answers = {gone};
    const Clock::time_point t0 = Clock::now();
    f->query(true, t0);
    f->query(true, t0 + 1s);
    EXPECT_EQ(notices.count("warn: Slurm does not say how job 12 is (Invalid job id specified)"), 1u);
    BatchedWriter writer(store, run);
    OutputRouter router(writer, LauncherFormat::Slurm, "login1", false);
    EXPECT_FALSE(f->over(router, t0 + 30s));
    EXPECT_TRUE(f->over(router, t0 + 61s));
}

TEST_F(Follower, TheJobsOutputIsReadOnFromWhereItWasLeft) {
    std::ofstream(runDir + "/output.log") << "0: already stored\n1: a line\n";
    auto f = follower();
    SlurmJob submitted;
    submitted.job_id = "12";
    f->resume(submitted, 18); // "0: already stored\n"
    BatchedWriter writer(store, run);
    OutputRouter router(writer, LauncherFormat::Slurm, "login1", false);
    EXPECT_TRUE(f->readOutput(router));
    EXPECT_EQ(f->bytesRead(), 28);
    EXPECT_FALSE(f->readOutput(router));
    std::ofstream(runDir + "/output.log", std::ios::app) << "1: more";
    EXPECT_TRUE(f->readOutput(router));
    EXPECT_EQ(f->bytesRead(), 35);
    EXPECT_EQ(router.pendingBytes(OutputStream::Stdout), 7u); // an unfinished last line
    router.finishPipe(OutputStream::Stdout, 0);
    writer.flush();
    LogQuery q;
    EXPECT_EQ(store.logCount(run, q), 2);
}

TEST_F(Follower, AStopReachesTheJobThroughScancel) {
    auto f = follower();
    EXPECT_FALSE(f->launched());
    SlurmJob submitted;
    submitted.job_id = "12";
    submitted.state = "RUNNING";
    f->resume(submitted, 0);
    EXPECT_TRUE(f->launched());
    EXPECT_EQ(f->name(), "Slurm job 12");
    f->signalRanks(SIGUSR1);
    f->killRanks();
    f->terminate();
    EXPECT_EQ(slurm.asked, (std::vector<std::string>{"signal 12 USR1", "signal 12 KILL", "cancel 12"}));
    EXPECT_EQ(notices.last(), "error: cannot cancel Slurm job 12: scancel: error: Kill job error on job id 12");
}

TEST_F(Follower, TheSrunJobTheRanksNameIsFollowedLessOften) {
    auto f = follower(false);
    const Clock::time_point t0 = Clock::now();
    f->adopt("77", t0);
    f->adopt("78", t0); // the first one stays
    EXPECT_EQ(f->jobId(), "77");
    slurm.answers = {status("RUNNING")};
    f->query(false, t0); // due at once after the adoption
    EXPECT_EQ(slurm.asked, std::vector<std::string>{"query 77"});
    f->query(false, t0 + 4s);
    EXPECT_EQ(slurm.asked.size(), 1u) << "srun mode asks every five polls";
    f->query(false, t0 + 5s);
    EXPECT_EQ(slurm.asked.size(), 2u);
    EXPECT_EQ(store.slurmJob(run)->mode, SlurmMode::Srun);
}
