#pragma once

#include "core/launch/SlurmJobs.h"

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace parallax {

// The Slurm commands a run's supervisor uses on its job (SlurmJobs.h: scontrol and squeue,
// sbatch, scancel); a test gives its own.
class SlurmControl {
public:
    virtual ~SlurmControl() = default;
    virtual SlurmJobStatus query(const std::string& jobId, std::chrono::milliseconds timeout) = 0;
    // The job's id; std::runtime_error with sbatch's words when Slurm refuses it.
    virtual std::string submit(const std::vector<std::string>& submit, const std::map<std::string, std::string>& env) = 0;
    // scancel --signal=NAME (the job's steps) and scancel: the complaint, or empty.
    virtual std::string signal(const std::string& jobId, const std::string& signal) = 0;
    virtual std::string cancel(const std::string& jobId) = 0;
};

// The real commands.
SlurmControl& slurmCommands();

} // namespace parallax
