#include "core/launch/LaunchPlan.h"

#include "core/launch/ShellQuote.h"
#include "core/launch/Ssh.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <stdexcept>
#include <thread>

namespace parallax {

namespace {

bool isVariableName(const std::string& name) {
    if (name.empty() || (name[0] >= '0' && name[0] <= '9'))
        return false;
    return std::all_of(name.begin(), name.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    });
}

void checkEnv(const RunSpec& spec) {
    for (const auto& [name, value] : spec.launch.env) {
        if (!isVariableName(name))
            throw std::invalid_argument("launch.env: \"" + name +
                                        "\" is not a valid environment variable name (letters, digits, _)");
    }
    for (const std::string& name : spec.launch.forward_env) {
        if (!isVariableName(name))
            throw std::invalid_argument("launch.forward_env: \"" + name +
                                        "\" is not a valid environment variable name (letters, digits, _)");
    }
}

// On hosts, the worker's path there (a cluster profile's worker), else the same path as here.
std::string workerPath(const LaunchContext& context) {
    if (context.cluster && !context.cluster->worker.empty())
        return context.cluster->worker;
    return context.worker.empty() ? std::string("parallax-worker") : context.worker;
}

// libparallax-loopback.so in the folder of this executable (the build tree: the three executables
// and the library are built into one folder), else in ../lib/parallax beside it (installed:
// /usr/bin and /usr/lib/parallax); empty when neither has it.
std::string loopbackLibraryBesideThisExecutable() {
    char self[4096];
    const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return {};
    std::string path(self, static_cast<size_t>(n));
    const size_t slash = path.rfind('/');
    if (slash == std::string::npos)
        return {};
    const std::string folder = path.substr(0, slash + 1);
    for (const std::string& candidate :
         {folder + "libparallax-loopback.so", folder + "../lib/parallax/libparallax-loopback.so"})
        if (::access(candidate.c_str(), R_OK) == 0)
            return candidate;
    return {};
}

// Open MPI's defaults for a run on this machine alone, so that no process of it listens on an
// address other hosts can reach. Set in the environment, not as --mca arguments: mpirun refuses a
// parameter given twice on its command line, and the command line (launch.mpirun_args) takes
// precedence over the environment, so a person's own --mca settings still win.
//  - pml ob1 over btl self,vader: the ranks talk through shared memory. btl tcp listens on every
//    address whatever btl_tcp_if_include says, and ob1 keeps out UCX and libfabric, which bring
//    TCP transports of their own.
//  - oob_tcp_if_include lo: mpirun advertises only its loopback address. Its out-of-band listener
//    still binds 0.0.0.0 and [::] (orte/mca/oob/tcp/oob_tcp_listener.c binds INADDR_ANY, and no
//    parameter changes that: oob_tcp_disable_ipv6_family leaves the [::] listener too), hence the
//    preloaded library that rebinds wildcard addresses to loopback.
//  - NCCL_SOCKET_IFNAME=lo: NCCL's bootstrap and proxy sockets listen on the interface it picks
//    (the first non-loopback one); the ranks of one host need no other.
void setLocalNetworkDefaults(LaunchPlan& plan, const RunSpec& spec, const LaunchContext& context) {
    plan.env["OMPI_MCA_pml"] = "ob1";
    plan.env["OMPI_MCA_btl"] = "self,vader";
    plan.env["OMPI_MCA_oob_tcp_if_include"] = "lo";
    if (spec.launch.device == Device::Cuda)
        plan.env["NCCL_SOCKET_IFNAME"] = "lo";
    const std::string library =
        context.loopback_library.empty() ? loopbackLibraryBesideThisExecutable() : context.loopback_library;
    if (library.empty()) {
        plan.warnings.push_back("libparallax-loopback.so is neither beside this executable nor in ../lib/parallax, so mpirun's listeners "
                                "bind every address of this host, not loopback only; reinstall Parallax");
        return;
    }
    std::string preload = library;
    const char* own = std::getenv("LD_PRELOAD");
    const std::string kept = context.preload ? *context.preload : std::string(own ? own : "");
    if (!kept.empty())
        preload += ":" + kept;
    plan.env["LD_PRELOAD"] = preload;
}

// launch.env and launch.forward_env: the values go in the launcher's environment only, the names
// in `hidden`. A forwarded variable comes from this process's environment.
void setHiddenEnv(LaunchPlan& plan, const RunSpec& spec) {
    for (const auto& [name, value] : spec.launch.env) {
        plan.env[name] = value;
        plan.hidden.insert(name);
    }
    for (const std::string& name : spec.launch.forward_env) {
        const char* value = std::getenv(name.c_str());
        if (!value)
            throw std::invalid_argument("launch.forward_env: " + name +
                                        " is not set in the environment this run is started from; export it "
                                        "first (export " + name + "=...), or leave it out of launch.forward_env");
        plan.env[name] = value;
        plan.hidden.insert(name);
    }
}

// The names mpirun passes on with -x NAME.
std::vector<std::string> passedNames(const RunSpec& spec) {
    std::vector<std::string> names;
    for (const auto& [name, value] : spec.launch.env)
        names.push_back(name);
    names.insert(names.end(), spec.launch.forward_env.begin(), spec.launch.forward_env.end());
    return names;
}

// The variables a cluster profile sets for every rank, passed by mpirun -x NAME.
std::vector<std::string> clusterEnvNames(const LaunchContext& context) {
    std::vector<std::string> names;
    if (context.cluster)
        for (const auto& [name, value] : context.cluster->env) names.push_back(name);
    return names;
}

// A cluster profile's settings, in mpirun's environment (so that launch.mpirun_args still
// override them): its Open MPI parameters, how ssh reaches the hosts (plm_rsh_args), and the
// variables of its [env].
void setClusterSettings(LaunchPlan& plan, const LaunchContext& context) {
    if (!context.cluster)
        return;
    // A person's own OMPI_MCA_* in the environment, and launch.mpirun_args, win over the profile.
    for (const auto& [name, value] : context.cluster->mca)
        if (!std::getenv(("OMPI_MCA_" + name).c_str()))
            plan.env["OMPI_MCA_" + name] = value;
    if (!plan.env.count("OMPI_MCA_plm_rsh_args") && !std::getenv("OMPI_MCA_plm_rsh_args"))
        plan.env["OMPI_MCA_plm_rsh_args"] = mpirunSshArgs(context.cluster->ssh);
    for (const auto& [name, value] : context.cluster->env)
        plan.env[name] = value;
}

int64_t threadsPerRank(const RunSpec& spec, int cores, int64_t ranksHere) {
    if (spec.launch.threads_per_rank > 0)
        return spec.launch.threads_per_rank;
    return std::max<int64_t>(1, cores / std::max<int64_t>(1, ranksHere));
}

} // namespace

std::string slurmMpiPlugin(const std::string& listed) {
    // srun --mpi=list prints "MPI plugin types are...", then one plugin a line ("pmix", "pmix_v4"),
    // and in 22.05 a line of "specific pmix plugin versions available: pmix_v4".
    bool pmix = false;
    size_t at = 0;
    while ((at = listed.find("pmix", at)) != std::string::npos) {
        const bool wordStart = at == 0 || !std::isalnum(static_cast<unsigned char>(listed[at - 1]));
        if (wordStart) pmix = true;
        at += 4;
    }
    return pmix ? "pmix" : std::string();
}

std::string LaunchPlan::commandLine() const {
    std::string line;
    for (const auto& [name, value] : env) {
        if (hidden.count(name))
            line += name + "=\"$" + name + "\" ";
        else
            line += name + "=" + shellQuote(value) + " ";
    }
    const std::vector<std::string>& words = submit.empty() ? argv : submit;
    for (size_t i = 0; i < words.size(); ++i) {
        if (i > 0)
            line.push_back(' ');
        line += shellQuote(words[i]);
    }
    return line;
}

namespace {

// local and hosts: mpirun.
void draftMpirun(LaunchDraft& draft, const RunSpec& spec, const LaunchContext& context) {
    const int cores = context.cores > 0 ? context.cores
                                        : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    const bool root = context.root.value_or(geteuid() == 0);
    const int64_t n = spec.processCount();
    const Choice<Target>& target = spec.launch.target;
    LaunchPlan& plan = draft.plan;
    std::vector<std::string>& a = draft.launcher;
    plan.format = LauncherFormat::OpenMpi;
    a.push_back(context.launcher.empty() ? std::string("mpirun") : context.launcher);
    a.insert(a.end(), {"-np", std::to_string(n)});
    int64_t ranksPerHost = n;
    if (target == Target::Hosts) {
        if (!spec.launch.cluster.empty() && !context.cluster)
            throw std::invalid_argument("launch.cluster = \"" + spec.launch.cluster +
                                        "\": the cluster profile was not read (resolveHosts)");
        const std::vector<std::string>& hostList = context.cluster ? context.cluster->hosts : spec.launch.hosts;
        if (hostList.empty())
            throw std::invalid_argument(
                "launch.hosts is empty but launch.target = \"hosts\"; list hosts as [\"node1:8\", \"node2:8\"]");
        std::string hosts;
        for (const std::string& h : hostList) {
            if (!hosts.empty())
                hosts.push_back(',');
            hosts += h;
        }
        a.insert(a.end(), {"--host", hosts});
        const int64_t count = static_cast<int64_t>(hostList.size());
        ranksPerHost = (n + count - 1) / count;
    }
    a.push_back("--tag-output");
    const bool oversubscribed = target == Target::Local && n > cores;
    if (oversubscribed)
        a.push_back("--oversubscribe");
    // More ranks than cores share them, and Open MPI refuses to bind a core twice unless told.
    a.insert(a.end(), {"--bind-to", spec.launch.bind.name() + (oversubscribed && spec.launch.bind != Bind::None
                                                                   ? ":overload-allowed"
                                                                   : "")});
    if (!spec.launch.env.count("OMP_NUM_THREADS"))
        a.insert(a.end(),
                 {"-x", "OMP_NUM_THREADS=" + std::to_string(threadsPerRank(spec, cores, ranksPerHost))});
    // -x NAME: mpirun passes the value from its own environment on.
    for (const std::string& name : passedNames(spec))
        a.insert(a.end(), {"-x", name});
    for (const std::string& name : clusterEnvNames(context))
        a.insert(a.end(), {"-x", name});
    draft.run_dir_mca = target == Target::Hosts;
    if (target == Target::Local)
        setLocalNetworkDefaults(plan, spec, context);
    else
        setClusterSettings(plan, context);
    if (root) {
        plan.env["OMPI_ALLOW_RUN_AS_ROOT"] = "1";
        plan.env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1";
    }
    setHiddenEnv(plan, spec);
}

// slurm: srun, or sbatch running srun.
void draftSrun(LaunchDraft& draft, const RunSpec& spec, const LaunchContext& context) {
    const int64_t n = spec.processCount();
    LaunchPlan& plan = draft.plan;
    std::vector<std::string>& a = draft.launcher;
    plan.format = LauncherFormat::Slurm;
    a.push_back(context.launcher.empty() ? std::string("srun") : context.launcher);
    a.insert(a.end(), {"--label", "-n", std::to_string(n)});
    const LaunchSpec& l = spec.launch;
    // Open MPI's ranks start under srun only through the PMI plugin Slurm offers for them
    // (pmix): without one every rank fails in MPI_Init.
    if (!context.slurm_mpi.empty())
        a.push_back("--mpi=" + context.slurm_mpi);
    const bool batch = l.slurm_mode == SlurmMode::Batch;
    // The allocation's options: on srun, or on sbatch for a batch job (srun inside takes the
    // allocation it runs in).
    std::vector<std::string>& sbatch = draft.batch_options;
    std::vector<std::string>& alloc = batch ? sbatch : a;
    if (batch) {
        draft.batch = true;
        draft.job_name = spec.name;
        for (char& c : draft.job_name)
            if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
        if (draft.job_name.empty())
            draft.job_name = "parallax";
        sbatch = {"-n", std::to_string(n)};
    }
    if (l.nodes > 0)
        alloc.push_back("--nodes=" + std::to_string(l.nodes));
    if (l.tasks_per_node > 0)
        alloc.push_back("--ntasks-per-node=" + std::to_string(l.tasks_per_node));
    if (!l.partition.empty())
        alloc.push_back("--partition=" + l.partition);
    if (!l.account.empty())
        alloc.push_back("--account=" + l.account);
    if (!l.qos.empty())
        alloc.push_back("--qos=" + l.qos);
    if (!l.constraint.empty())
        alloc.push_back("--constraint=" + l.constraint);
    if (!l.time_limit.empty())
        alloc.push_back("--time=" + l.time_limit);
    if (l.gpus_per_node > 0)
        alloc.push_back("--gpus-per-node=" + std::to_string(l.gpus_per_node));
    // Before the time limit ends the job, USR1 asks the ranks to checkpoint and stop.
    if (!l.time_limit.empty() && l.signal_margin_s > 0)
        alloc.push_back("--signal=USR1@" + std::to_string(l.signal_margin_s));
    if (l.threads_per_rank > 0) {
        a.push_back("--cpus-per-task=" + std::to_string(l.threads_per_rank));
        if (batch) sbatch.push_back("--cpus-per-task=" + std::to_string(l.threads_per_rank));
        plan.env["OMP_NUM_THREADS"] = std::to_string(l.threads_per_rank);
    }
    setHiddenEnv(plan, spec);
}

} // namespace

LaunchDraft draftLaunch(const RunSpec& spec, const LaunchContext& context) {
    checkEnv(spec);
    LaunchDraft draft;
    draft.worker = workerPath(context);
    draft.worker_args = context.worker_args;
    draft.launcher_args = spec.launch.mpirun_args;
    const Choice<Target>& target = spec.launch.target;
    if (target == Target::Local || target == Target::Hosts)
        draftMpirun(draft, spec, context);
    else if (target == Target::Slurm)
        draftSrun(draft, spec, context);
    else
        throw std::invalid_argument("launch.target = \"" + target.name() + "\" is not one of local, hosts, slurm");
    return draft;
}

LaunchPlan LaunchDraft::forRun(const std::string& specPath, const std::string& runDir,
                               const std::string& resumeDir) const {
    LaunchPlan p = plan;
    std::vector<std::string>& a = p.argv;
    a = launcher;
    // mpirun hands its command line's MCA parameters to the orted it starts on each host: the run
    // folder on an orted's command line lets a host's cleanup find it, even once the ranks it
    // served are gone (HostSweep). Open MPI itself reads no such parameter.
    if (run_dir_mca && !runDir.empty())
        a.insert(a.end(), {"--mca", "parallax_run_dir", runDir});
    a.insert(a.end(), launcher_args.begin(), launcher_args.end());
    a.insert(a.end(), {worker, "--spec", specPath, "--run-dir", runDir});
    if (!resumeDir.empty())
        a.insert(a.end(), {"--resume", resumeDir});
    a.insert(a.end(), worker_args.begin(), worker_args.end());
    if (!batch)
        return p;
    const std::string dir = runDir.empty() ? std::string(".") : runDir;
    p.submit = {"sbatch", "--parsable", "--job-name=" + job_name, "--chdir=" + dir, "--output=" + dir + "/output.log",
                "--open-mode=append"};
    p.submit.insert(p.submit.end(), batch_options.begin(), batch_options.end());
    p.submit.push_back(dir + "/job.sh");
    std::string line;
    for (const std::string& arg : a) line += (line.empty() ? "" : " ") + shellQuote(arg);
    p.script = "#!/bin/sh\n"
               "# The ranks of the run in " + dir + ", in the allocation sbatch made for them.\n"
               "exec " + line + "\n";
    return p;
}

LaunchPlan makeLaunchPlan(const RunSpec& spec, const LaunchContext& context) {
    return draftLaunch(spec, context).forRun(context.spec_path, context.run_dir, context.resume_dir);
}

} // namespace parallax
