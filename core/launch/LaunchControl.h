#pragma once

#include <string>

namespace parallax {

// What stopping a run can do to its launch: the launcher's processes here, or a Slurm batch job.
class LaunchControl {
public:
    virtual ~LaunchControl() = default;
    // Something was started that a stop must reach: the launcher, or a submitted job.
    virtual bool launched() const = 0;
    // A batch job that still waits in the queue: nothing of it runs, nothing to checkpoint.
    virtual bool queued() const = 0;
    // How the notices name it: "mpirun", "Slurm job 12".
    virtual std::string name() const = 0;
    // A signal to every rank: through the launcher, which passes it on, or to a job's steps.
    virtual void signalRanks(int signal) = 0;
    // The launcher is asked to end (SIGTERM); a batch job is cancelled.
    virtual void terminate() = 0;
    // The last step of a stop: SIGKILL to every process of the launch, or to a job's steps.
    virtual void killRanks() = 0;
    // Everything of the launch ends now: SIGKILL to every process, or the job cancelled.
    virtual void killAll() = 0;
};

} // namespace parallax
