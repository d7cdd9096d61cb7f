#pragma once

#include "core/launch/LaunchControl.h"
#include "core/launch/LaunchPlan.h"
#include "core/launch/NoticeSink.h"
#include "core/launch/SlurmControl.h"
#include "core/store/RunStore.h"

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <string>

namespace parallax {

class OutputRouter;

// Follows the Slurm job a run runs in. launch.slurm_mode = "batch": submits the job (its script
// job.sh in the run folder), reads the output Slurm writes to the run's output.log, and follows
// the job to its end, also again once its first supervisor is gone (parallax-cli attach); a stop
// reaches the job through it (LaunchControl: scancel). srun mode: follows the job the ranks name.
// What Slurm says of the job goes to the store when it changes (the time left: each minute), and
// a change of its state is said.
class SlurmBatchFollower : public LaunchControl {
public:
    using Clock = std::chrono::steady_clock;

    // `batch`: a batch job (else the ranks' srun job); `poll`: how often Slurm is asked (srun mode
    // five times less often, with a shorter wait, since the same loop reads the ranks' pipes).
    SlurmBatchFollower(RunStore& store, int64_t runId, std::string runDir, std::string host, bool batch,
                       NoticeSink& notices, SlurmControl& slurm = slurmCommands(),
                       std::chrono::milliseconds poll = std::chrono::seconds(2));
    ~SlurmBatchFollower() override;
    SlurmBatchFollower(const SlurmBatchFollower&) = delete;
    SlurmBatchFollower& operator=(const SlurmBatchFollower&) = delete;

    void setStoreErrorHandler(std::function<void(const std::exception&)> handler) { m_onStoreError = std::move(handler); }

    // <run dir>/follow.lock, held while this follower lives: one supervisor follows a job at a
    // time, since two would write its rows twice. False when another holds it.
    bool takeFollowLock();
    // Submits the plan's job (its script into the run folder, sbatch with the allocation's options).
    void submit(const LaunchPlan& plan);
    // A job submitted before (parallax-cli attach), whose output.log was read up to `readFrom`.
    void resume(const SlurmJob& job, int64_t readFrom);
    // srun mode: the job the ranks run in, named by them (the run is marked running already).
    void adopt(const std::string& jobId, Clock::time_point now);

    // What Slurm says of the job now (`force`), or when its poll is due.
    void query(bool force, Clock::time_point now);
    // Hands what Slurm wrote to output.log since the last call to `router`. Returns whether there was any.
    bool readOutput(OutputRouter& router);
    // The job is over: Slurm says it ended, or, once Slurm forgot it (after its MinJobAge, a job
    // that ended while nobody followed it), the ranks' run_end tells, or a minute without a word.
    bool over(const OutputRouter& router, Clock::time_point now) const;
    // After the end: what the job wrote last, which may reach the (network) file a moment later.
    void readLastOutput(OutputRouter& router);

    const std::string& jobId() const { return m_jobId; }
    const SlurmJobStatus& job() const { return m_job; }
    // Bytes of output.log handed on so far (how far the store's rows reach into it).
    int64_t bytesRead() const { return m_read; }

    // A batch job as a stop reaches it.
    bool launched() const override { return !m_jobId.empty(); }
    bool queued() const override { return m_job.job.state == "PENDING"; }
    std::string name() const override { return "Slurm job " + m_jobId; }
    void signalRanks(int signal) override;
    void terminate() override { killAll(); }
    void killRanks() override;
    void killAll() override;

private:
    void record(const SlurmJobStatus& st);

    RunStore& m_store;
    int64_t m_runId;
    std::string m_runDir;
    std::string m_host;
    bool m_batch;
    NoticeSink& m_notices;
    SlurmControl& m_slurm;
    std::chrono::milliseconds m_poll;
    std::function<void(const std::exception&)> m_onStoreError;
    std::string m_jobId;
    SlurmJobStatus m_job;
    std::string m_recorded; // what was last written to the store of it
    bool m_runningMarked = false;
    int m_fd = -1;          // output.log, read from m_read on
    int64_t m_read = 0;
    int m_lock = -1;
    Clock::time_point m_lastQuery;
    Clock::time_point m_lastKnown = Clock::now();
};

} // namespace parallax
