#pragma once

#include "core/launch/CheckedSpec.h"
#include "core/launch/LaunchPlan.h"
#include "core/launch/Preflight.h"
#include "core/launch/RunFolders.h"
#include "core/store/RunStore.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace parallax {

// Everything a new run needs before it exists, decided once: its spec (read and validated once),
// for a resume the run it continues and that run's checkpoints, for hosts what preflight found,
// the launch context completed (the cluster profile, srun's MPI plugin) and the launch drafted
// (LaunchDraft: its run's paths are bound once its folder exists).
struct PreparedRun {
    CheckedSpec spec;                    // warnings: the validator's, then what a resume changes
    std::optional<int64_t> parent_run;   // a resume: the run it continues...
    std::string resume_dir;              // ...and its checkpoints
    std::vector<HostCheck> host_checks;  // target = "hosts": what preflight found
    LaunchContext launch;
    LaunchDraft draft;
};

// parallax-cli attach: a run in a Slurm batch job whose supervisor is gone, followed again.
struct AttachedRun {
    RunRecord run;
    RunSpec spec;
    SlurmJob job;
};

// Prepares a run before it exists; whatever it throws, nothing was created (SpecError,
// SpecRejected, PreflightFailed, std::invalid_argument for a launch it cannot plan,
// std::runtime_error for a run it cannot resume or attach to).
class RunPreparation {
public:
    // `host`: this host's name, as the store records supervisors; `launch`: the worker, launcher
    // and cores, completed here.
    RunPreparation(RunStore& store, RunFolders& folders, std::string host, LaunchContext launch);

    // A new run of `spec`.
    PreparedRun newRun(CheckedSpec spec);
    // A new run that resumes `runId` from its checkpoints, with that run's spec, or `specPath`
    // (another layout, hosts or devices; the same model) and/or `sets` (applySpecOverrides) on top.
    PreparedRun resume(int64_t runId, const std::string& specPath, const std::vector<std::string>& sets);
    // A batch job's run whose supervisor is gone.
    AttachedRun attach(int64_t runId);

private:
    PreparedRun planLaunch(CheckedSpec spec);
    void checkHosts(PreparedRun& run);
    void requireEnded(const RunRecord& parent) const;

    RunStore& m_store;
    RunFolders& m_folders;
    std::string m_host;
    LaunchContext m_launch;
};

} // namespace parallax
