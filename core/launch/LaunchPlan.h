#pragma once

#include "core/launch/OutputDemux.h"
#include "core/launch/ShellQuote.h"
#include "core/spec/ClusterProfile.h"
#include "core/spec/RunSpec.h"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace parallax {

// What the supervisor knows about this launch beyond the spec.
struct LaunchContext {
    std::string worker;                   // the parallax-worker executable
    std::vector<std::string> worker_args; // extra worker arguments, after the standard ones
    std::string spec_path;                // the run's spec.toml
    std::string run_dir;
    std::string resume_dir;               // checkpoint folder to resume from; empty: a fresh run
    std::string launcher;                 // empty: "mpirun" (local, hosts) or "srun" (slurm), from PATH
    int cores = 0;                        // 0: std::thread::hardware_concurrency()
    std::optional<bool> root;             // unset: whether this process runs as root
    // Preloaded into a local mpirun so that its listening sockets bind to loopback only (see
    // core/launch/LoopbackBind.c). Empty: libparallax-loopback.so beside this executable, when it
    // is there.
    std::string loopback_library;
    std::optional<std::string> preload;   // LD_PRELOAD to keep; unset: this process's
    // target = "hosts": the hosts and how to reach them (resolveHosts(spec): the profile of
    // launch.cluster, or launch.hosts). Unset: launch.hosts with ssh's own settings; required
    // with launch.cluster.
    std::optional<ClusterProfile> cluster;
    // target = "slurm": srun's MPI plugin for the ranks (slurmMpiPlugin()); empty: none passed.
    std::string slurm_mpi;
};

// The plugin srun should start Open MPI ranks with: pmix (any pmix_v*) where `srun --mpi=list`
// offers it, else empty. `listed` is that command's output.
std::string slurmMpiPlugin(const std::string& listed);

// The launcher command for a run: an argument vector (never a shell string) and the variables to
// set on top of the supervisor's environment.
struct LaunchPlan {
    std::vector<std::string> argv;
    std::map<std::string, std::string> env;
    // Names in env whose values are shown nowhere: launch.env carries tokens and keys, and a
    // command line is readable by every user of the host (/proc/PID/cmdline), as are the store
    // and the logs the command is written to. mpirun gets them as -x NAME, srun passes its
    // environment on.
    std::set<std::string> hidden;
    LauncherFormat format = LauncherFormat::OpenMpi;
    // What the plan could not arrange as it should, for the run's log (e.g. the loopback library
    // is missing, so a local mpirun listens on every address).
    std::vector<std::string> warnings;

    // launch.slurm_mode = "batch": argv is what the job script runs (srun in the allocation);
    // `script` is that script (kept in the run folder as job.sh) and `submit` the sbatch command
    // that submits it, with the allocation's options, its output going to the run's output.log.
    // Empty otherwise.
    std::vector<std::string> submit;
    std::string script;

    // The same command as one line a person can paste into a shell: VAR=value prefixes (NAME="$NAME"
    // for hidden names, so that it runs once they are exported), then the arguments (of `submit`
    // for a batch job), each quoted where the shell would otherwise change it.
    std::string commandLine() const;
};

// local:  mpirun -np N --tag-output [--oversubscribe] --bind-to B -x OMP_NUM_THREADS=T -x K...
//         [mpirun_args...] worker --spec S --run-dir D [--resume C] [worker_args...]
//         (--oversubscribe when N exceeds the cores; T = launch.threads_per_rank or cores / N, at
//         least 1). Nothing of it listens on the network: the environment sets Open MPI's
//         defaults to shared memory between the ranks (OMPI_MCA_pml=ob1, OMPI_MCA_btl=self,vader),
//         mpirun's out-of-band channel to loopback (OMPI_MCA_oob_tcp_if_include=lo and
//         LD_PRELOAD of the loopback library) and NCCL's sockets to loopback on cuda
//         (NCCL_SOCKET_IFNAME=lo); launch.mpirun_args (--mca btl tcp,self) and launch.env override
//         them.
// hosts:  the same with --host a:8,b:8 (the cluster profile's hosts, or launch.hosts), no
//         --oversubscribe and no loopback settings; the profile's [mca] as OMPI_MCA_*, its ssh
//         settings as OMPI_MCA_plm_rsh_args (batch mode always), its [env] with -x NAME, and its
//         worker path (unless the environment sets those already); T from the
//         ranks per host.
// slurm:  srun --label -n N [--mpi=pmix] [--nodes=K] [--ntasks-per-node=M] [--partition=P]
//         [--account=A] [--qos=Q] [--constraint=C] [--time=T --signal=USR1@S] [--gpus-per-node=G]
//         [--cpus-per-task=C] [mpirun_args...] worker ...; launch.env and OMP_NUM_THREADS (when
//         launch.threads_per_rank is set) go in the environment, which srun passes on.
//         With launch.slurm_mode = "batch" the allocation's options (-n, nodes, tasks per node,
//         partition, account, qos, constraint, time and signal, GPUs, CPUs per task) go on
//         `submit` instead: sbatch --parsable --job-name=NAME --chdir=D --output=D/output.log
//         --open-mode=append ... D/job.sh, whose script runs srun --label -n N [--mpi=pmix]
//         [--cpus-per-task=C] [mpirun_args...] worker ...; sbatch passes the environment on.
// launch.env K=V always goes in the launcher's environment and in `hidden`, never on its command
// line. Running as root adds OMPI_ALLOW_RUN_AS_ROOT=1 and OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 for
// mpirun.
// Throws std::invalid_argument naming the field for a target it cannot launch.
LaunchPlan makeLaunchPlan(const RunSpec& spec, const LaunchContext& context);

// A launch planned before its run exists: every choice made and every refusal thrown, as by
// makeLaunchPlan, and the run's own paths (its spec file, its folder, the checkpoints it resumes
// from) bound by forRun() once its folder exists.
struct LaunchDraft {
    LaunchPlan plan;                         // the environment, hidden names, format and warnings
    std::vector<std::string> launcher;       // the launcher's arguments before the run's own
    bool run_dir_mca = false;                // hosts: --mca parallax_run_dir <run dir> (HostSweep)
    std::vector<std::string> launcher_args;  // launch.mpirun_args
    std::string worker;                      // the worker's path (on the hosts)
    std::vector<std::string> worker_args;
    bool batch = false;                      // launch.slurm_mode = "batch": sbatch runs the script
    std::string job_name;
    std::vector<std::string> batch_options;  // sbatch's allocation options, from -n N on

    LaunchPlan forRun(const std::string& specPath, const std::string& runDir, const std::string& resumeDir) const;
};
// makeLaunchPlan(spec, context) is draftLaunch(spec, context).forRun(context's paths).
LaunchDraft draftLaunch(const RunSpec& spec, const LaunchContext& context);

} // namespace parallax
