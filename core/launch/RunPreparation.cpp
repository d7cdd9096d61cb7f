#include "core/launch/RunPreparation.h"

#include "core/launch/CommandRun.h"
#include "core/launch/ProcessTable.h"
#include "core/launch/SpecRejected.h"
#include "core/spec/SpecIO.h"
#include "core/spec/SpecOverrides.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace parallax {

namespace fs = std::filesystem;

namespace {

// Whether launch.mpirun_args chooses srun's MPI plugin itself (--mpi=X or --mpi X).
bool namesMpiPlugin(const std::vector<std::string>& args) {
    for (const std::string& a : args)
        if (a == "--mpi" || a.rfind("--mpi=", 0) == 0) return true;
    return false;
}

// Zombies count as ended: a supervisor killed after its parent exited may stay one for good.
bool pidAlive(int64_t pid) { return processIsRunning(static_cast<pid_t>(pid)); }

// Processes on this host started for the run folder `dir` (mpirun and the workers get it as
// --run-dir), as "pid 123 (parallax-worker)".
std::vector<std::string> processesOfRunFolder(const std::string& dir) {
    std::vector<std::string> found;
    std::error_code ec;
    const std::string needle = std::string("--run-dir") + '\0' + dir + '\0';
    for (const fs::directory_entry& e : fs::directory_iterator("/proc", ec)) {
        const std::string name = e.path().filename().string();
        if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos)
            continue;
        std::ifstream in(e.path() / "cmdline", std::ios::binary);
        std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        if (cmdline.find(needle) == std::string::npos || !processIsRunning(std::stoi(name)))
            continue;
        const std::string program = cmdline.substr(0, cmdline.find('\0'));
        found.push_back("pid " + name + " (" + fs::path(program).filename().string() + ")");
    }
    return found;
}

std::string joined(const std::vector<std::string>& items) {
    std::string out;
    for (const std::string& i : items)
        out += (out.empty() ? "" : ", ") + i;
    return out;
}

std::string noSuchRun(int64_t id, const RunStore& store) {
    return "no run " + std::to_string(id) + " in " + store.path() + "; see parallax-cli ls";
}

} // namespace

RunPreparation::RunPreparation(RunStore& store, RunFolders& folders, std::string host, LaunchContext launch)
    : m_store(store), m_folders(folders), m_host(std::move(host)), m_launch(std::move(launch)) {}

PreparedRun RunPreparation::newRun(CheckedSpec spec) { return planLaunch(std::move(spec)); }

PreparedRun RunPreparation::resume(int64_t runId, const std::string& specPath, const std::vector<std::string>& sets) {
    const std::optional<RunRecord> parent = m_store.run(runId);
    if (!parent)
        throw std::runtime_error(noSuchRun(runId, m_store));
    requireEnded(*parent);
    if (const std::optional<std::string> problem = m_folders.ownershipProblem(*parent))
        throw std::runtime_error("cannot resume run " + std::to_string(parent->id) + ": " + *problem +
                                 "; its checkpoints are not this run's");
    const fs::path checkpoints = fs::path(parent->run_dir) / "checkpoints";
    if (parent->run_dir.empty() || !fs::is_directory(checkpoints))
        throw std::runtime_error("run " + std::to_string(parent->id) + " has no checkpoints to resume from (" +
                                 (parent->run_dir.empty() ? std::string("it has no run folder")
                                                          : checkpoints.string() + " does not exist") +
                                 ")");
    const std::string source = "run " + std::to_string(parent->id);
    const RunSpec before = parseSpec(parent->spec_toml, source);
    CheckedSpec checked;
    std::vector<SpecIssue> changes;
    if (specPath.empty() && sets.empty()) {
        std::vector<SpecIssue> issues = validateSpec(before, thisMachine());
        if (hasErrors(issues))
            throw SpecRejected(std::move(issues));
        checked = {before, parent->spec_toml, std::move(issues)};
    } else {
        // Continued on another layout, hosts or devices: the checkpoint is layout-free, but it
        // holds one model.
        RunSpec next = specPath.empty() ? before : readSpecFile(specPath);
        next = applySpecOverrides(next, sets);
        changes = resumeIssues(before, next, parent->id);
        if (hasErrors(changes))
            throw SpecRejected(std::move(changes));
        checked = checkSpec(next);
    }
    checked.warnings.insert(checked.warnings.end(), changes.begin(), changes.end());
    PreparedRun prepared = planLaunch(std::move(checked));
    prepared.parent_run = parent->id;
    prepared.resume_dir = checkpoints.string();
    return prepared;
}

// A launch that cannot be planned fails here, before a run exists.
PreparedRun RunPreparation::planLaunch(CheckedSpec spec) {
    PreparedRun prepared;
    prepared.spec = std::move(spec);
    prepared.launch = m_launch;
    const RunSpec& s = prepared.spec.spec;
    if (s.launch.target == Target::Hosts)
        checkHosts(prepared);
    if (s.launch.target == Target::Slurm) {
        std::vector<std::string> problems = slurmPreflight(s);
        if (!problems.empty())
            throw PreflightFailed(std::move(problems));
        if (prepared.launch.slurm_mpi.empty() && !namesMpiPlugin(s.launch.mpirun_args)) {
            // Which PMI plugin this Slurm offers Open MPI's ranks (pmix on Debian's).
            const std::vector<CommandResult> listed = runCommands({{"srun", "--mpi=list"}}, std::chrono::seconds(10));
            prepared.launch.slurm_mpi = slurmMpiPlugin(listed[0].out + listed[0].err);
        }
    }
    prepared.draft = draftLaunch(s, prepared.launch);
    return prepared;
}

// Before anything starts on hosts: every host answers ssh, has the same worker, and shares the
// run folders; else PreflightFailed names each host and its fix, and no run is created.
void RunPreparation::checkHosts(PreparedRun& run) {
    if (!run.launch.cluster)
        run.launch.cluster = resolveHosts(run.spec.spec); // SpecError when the profile is missing or wrong
    std::error_code ec;
    fs::create_directories(m_folders.root(), ec);
    ::chmod(m_folders.root().c_str(), 0700);
    PreflightOptions po;
    po.local_worker = run.launch.worker.empty() ? std::string("parallax-worker") : run.launch.worker;
    po.shared_folder = m_folders.root();
    po.processes = run.spec.spec.processCount();
    run.host_checks = preflight(*run.launch.cluster, po);
    std::vector<std::string> problems = preflightProblems(run.host_checks);
    if (!problems.empty())
        throw PreflightFailed(std::move(problems));
}

// A run may be resumed only once nothing of it runs any more: a second copy would train beside
// the first and write into the same checkpoints.
void RunPreparation::requireEnded(const RunRecord& parent) const {
    const std::string id = std::to_string(parent.id);
    if (!isTerminal(parent.state) && parent.supervisor_pid > 0) {
        if (parent.supervisor_host != m_host)
            throw std::runtime_error("run " + id + " is " + runStateName(parent.state) + " under a supervisor on " +
                                     parent.supervisor_host + " (pid " + std::to_string(parent.supervisor_pid) +
                                     "); stop it there first (parallax-cli stop " + id + ")");
        if (pidAlive(parent.supervisor_pid))
            throw std::runtime_error("run " + id + " is still " + runStateName(parent.state) + " (supervisor pid " +
                                     std::to_string(parent.supervisor_pid) + " on " + m_host +
                                     "); stop it first: parallax-cli stop " + id);
    }
    if (!parent.run_dir.empty()) {
        const std::vector<std::string> alive = processesOfRunFolder(parent.run_dir);
        if (!alive.empty())
            throw std::runtime_error("run " + id + " is " + runStateName(parent.state) + " but processes of it still run on " +
                                     m_host + ": " + joined(alive) + "; end them (kill PID) before resuming it");
    }
}

AttachedRun RunPreparation::attach(int64_t id) {
    const std::optional<RunRecord> r = m_store.run(id);
    const std::string name = "run " + std::to_string(id);
    if (!r)
        throw std::runtime_error(noSuchRun(id, m_store));
    const std::optional<SlurmJob> j = m_store.slurmJob(id);
    if (!j || j->mode != SlurmMode::Batch || j->job_id.empty())
        throw std::runtime_error(name + " is not in a Slurm batch job (launch.slurm_mode = \"batch\"); only such a "
                                 "job goes on without its supervisor, to be followed again");
    if (isTerminal(r->state) && r->state != RunState::Lost)
        throw std::runtime_error(name + " has already ended (" + runStateName(r->state) + ")");
    if (r->supervisor_pid > 0 && r->state != RunState::Lost) {
        if (r->supervisor_host != m_host)
            throw std::runtime_error(name + " is followed by a supervisor on " + r->supervisor_host + " (pid " +
                                     std::to_string(r->supervisor_pid) + "); if it is gone, run parallax-cli "
                                     "attach " + std::to_string(id) + " there");
        if (pidAlive(r->supervisor_pid) && r->supervisor_pid != static_cast<int64_t>(getpid()))
            throw std::runtime_error(name + " is followed already (supervisor pid " +
                                     std::to_string(r->supervisor_pid) + " on " + m_host + ")");
    }
    return {*r, parseSpec(r->spec_toml, name), *j};
}

} // namespace parallax
