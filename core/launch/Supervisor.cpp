#include "core/launch/Supervisor.h"

#include "core/spec/LayoutLabel.h"

#include "core/launch/CommandRun.h"
#include "core/launch/HangDetector.h"
#include "core/launch/HostCleanup.h"
#include "core/launch/HostWatch.h"
#include "core/launch/LauncherProcess.h"
#include "core/launch/OutputImport.h"
#include "core/launch/OutputRouter.h"
#include "core/launch/Preflight.h"
#include "core/launch/ProcessTable.h"
#include "core/launch/RunFolders.h"
#include "core/launch/SignalNames.h"
#include "core/launch/SlurmJobs.h"
#include "core/launch/SpecRejected.h"
#include "core/launch/StopSignalHandler.h"
#include "core/launch/SupervisorHeartbeat.h"
#include "core/spec/MachineInfo.h"
#include "core/spec/SpecOverrides.h"
#include "core/spec/SpecIO.h"
#include "core/spec/SpecValidator.h"
#include "core/store/BatchedWriter.h"
#include "core/util/HostName.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <cmath>
#include <sstream>
#include <thread>

namespace parallax {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

constexpr auto kOutputFlushEvery = std::chrono::seconds(1);
constexpr auto kWaitCheckEvery = std::chrono::milliseconds(100);
constexpr auto kDrainLimit = std::chrono::seconds(5);
// While the ranks run, a store locked by someone else may hold the read loop up for this long per
// attempt (the ranks block once their output pipes fill), and the rows wait this long between
// attempts; once the run has ended, the supervisor waits for the store as long as it takes.
constexpr int kLiveBusyTimeoutMs = 250;
constexpr auto kLiveRetryAfter = std::chrono::seconds(2);
constexpr int kEndBusyTimeoutMs = 15000;
constexpr auto kEndRetryAfter = std::chrono::seconds(1);
constexpr int64_t kImportPerTurn = 8 << 20; // bytes of spooled output imported per turn of the loop
// A host that has not answered for this long is said to be silent (the run fails at host_timeout_s).
constexpr auto kSilentNotice = std::chrono::seconds(6);

double wallNow() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}


std::string seconds(std::chrono::milliseconds d) {
    std::ostringstream s;
    s << d.count() / 1000.0 << " s";
    return s.str();
}

// Zombies count as ended: a supervisor killed after its parent exited may stay one for good.
bool pidAlive(int64_t pid) { return processIsRunning(static_cast<pid_t>(pid)); }

std::string readWholeFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw SpecError(path + ": cannot read the spec file: " + std::strerror(errno));
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

// A new file of the run's folder, readable by its owner only (a spec may name secrets).
FILE* createPrivateFile(const fs::path& path) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    FILE* file = fd >= 0 ? ::fdopen(fd, "w") : nullptr;
    if (!file) {
        const int error = errno;
        if (fd >= 0)
            ::close(fd);
        throw std::runtime_error("cannot create " + path.string() + ": " + std::strerror(error));
    }
    return file;
}

void writeWholeFile(const fs::path& path, const std::string& text) {
    FILE* out = createPrivateFile(path);
    const bool written = std::fwrite(text.data(), 1, text.size(), out) == text.size();
    const int error = errno;
    if (std::fclose(out) != 0 || !written)
        throw std::runtime_error("cannot write " + path.string() + ": " + std::strerror(written ? errno : error));
}

// Whether launch.mpirun_args chooses srun's MPI plugin itself (--mpi=X or --mpi X).
bool namesMpiPlugin(const std::vector<std::string>& args) {
    for (const std::string& a : args)
        if (a == "--mpi" || a.rfind("--mpi=", 0) == 0) return true;
    return false;
}

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

} // namespace

struct Supervisor::State {
    enum class StopPhase { None, Graceful, Terminate, Kill };

    State(RunStore& s, SupervisorOptions o) : store(s), opt(std::move(o)) {
        if (pipe2(stopPipe, O_CLOEXEC | O_NONBLOCK) != 0)
            throw std::runtime_error(std::string("cannot create the supervisor's signal pipe: ") +
                                     std::strerror(errno));
    }
    ~State() {
        if (outputLog)
            std::fclose(outputLog);
        if (jobFd >= 0)
            ::close(jobFd);
        if (followLock >= 0)
            ::close(followLock);
        ::close(stopPipe[0]);
        ::close(stopPipe[1]);
    }

    RunStore& store;
    SupervisorOptions opt;
    int stopPipe[2] = {-1, -1};

    RunSpec spec;
    std::string specText;
    std::vector<SpecIssue> warnings;
    std::vector<HostCheck> hostChecks; // target = "hosts": what preflight found
    std::optional<int64_t> parentRun;
    std::vector<SpecIssue> resumeChanges; // what a resume with another spec changes that matters
    std::string resumeDir;
    std::string host;
    int64_t runId = 0;
    fs::path runDir;
    FILE* outputLog = nullptr;
    std::unique_ptr<BatchedWriter> writer;
    std::unique_ptr<RunFolders> runFolders;
    size_t spoolImported = 0; // rows imported from output.log since the router began to spool

    LaunchPlan plan;
    std::unique_ptr<OutputRouter> router;
    bool storeErrorReported = false;
    std::string storeRefusal; // the first error of the store's current refusal, and since when
    double storeRefusedSince = 0;
    std::string storeDamage; // the store's file is damaged: what SQLite said, and how to recover

    LauncherProcess launcher;
    // The ranks' sign that this supervisor lives (they exit when it stops changing).
    std::optional<SupervisorHeartbeat> heartbeat;
    // target = "hosts": whether each host answers, and what was said about it.
    std::unique_ptr<HostWatch> hostWatch;
    std::map<std::string, std::string> hostStates; // host -> answering | silent | lost
    std::set<std::string> slowSshSaid; // hosts whose slow ssh was said
    Clock::time_point lastHostRecord;
    std::string hostLostReason; // set when a host stayed silent past launch.host_timeout_s
    // What holds the run up: a hang (and when it was first named), a straggler.
    std::unique_ptr<HangDetector> hangs;
    std::optional<Clock::time_point> hangSince;
    std::string hangMessage, stragglerMessage;
    HangDetector::Finding hangFinding, stragglerFinding; // the last said, for when it ends
    std::vector<int> stragglerSaidRanks;
    Clock::time_point stragglerSaidAt;
    bool rankStepsArrived = false;
    std::optional<ContinuationPlan> continuation; // launch.on_host_failure = "resume"
    Clock::time_point lastHangCheck, lastHangSaid;
    std::optional<Clock::time_point> dumpDeadline; // on_hang = "fail": the ranks write their rings until then
    std::string hangFailReason;
    bool heartbeatFailureReported = false;
    std::optional<int64_t> lastCheckpoint; // the step of the newest checkpoint a rank reported
    // launch.slurm_mode = "batch": the job, what Slurm last said of it, and how far its output
    // (the run's output.log, written by Slurm) has been read.
    bool batch = false;
    bool attaching = false; // following the job of a run whose supervisor is gone
    std::string jobId;
    SlurmJobStatus job;
    std::string jobRecorded; // what was last written to the store of it
    bool jobRunningMarked = false;
    int jobFd = -1;
    int64_t jobRead = 0;
    int followLock = -1; // <run dir>/follow.lock, held while this supervisor follows the job
    Clock::time_point lastJobQuery;
    Clock::time_point jobLastKnown = Clock::now();
    StopPhase phase = StopPhase::None;
    int stopSignal = 0;
    Clock::time_point deadline;
    int killedLeftovers = 0;

    // ------------------------------------------------------------------ before the run exists
    void prepare() {
        std::string source;
        // A damaged file takes rows only to lose them: nothing starts on it.
        store.requireIntact();
        if (opt.attach_run) {
            prepareAttach(*opt.attach_run);
            return;
        }
        if (opt.resume_run) {
            std::optional<RunRecord> parent = store.run(*opt.resume_run);
            if (!parent)
                throw std::runtime_error("no run " + std::to_string(*opt.resume_run) + " in " + store.path() +
                                         "; see parallax-cli ls");
            requireEnded(*parent);
            if (const std::optional<std::string> problem = folders().ownershipProblem(*parent))
                throw std::runtime_error("cannot resume run " + std::to_string(parent->id) + ": " + *problem +
                                         "; its checkpoints are not this run's");
            const fs::path checkpoints = fs::path(parent->run_dir) / "checkpoints";
            if (parent->run_dir.empty() || !fs::is_directory(checkpoints))
                throw std::runtime_error("run " + std::to_string(parent->id) + " has no checkpoints to resume from (" +
                                         (parent->run_dir.empty() ? std::string("it has no run folder")
                                                                  : checkpoints.string() + " does not exist") +
                                         ")");
            specText = parent->spec_toml;
            parentRun = parent->id;
            resumeDir = checkpoints.string();
            source = "run " + std::to_string(parent->id);
            if (!opt.resume_spec_path.empty() || !opt.resume_sets.empty()) {
                // Continued on another layout, hosts or devices: the checkpoint is layout-free,
                // but it holds one model.
                const RunSpec before = parseSpec(specText, source);
                RunSpec next = before;
                if (!opt.resume_spec_path.empty()) {
                    next = readSpecFile(opt.resume_spec_path);
                    source = opt.resume_spec_path;
                }
                next = applySpecOverrides(next, opt.resume_sets);
                std::vector<SpecIssue> changes = resumeIssues(before, next, parent->id);
                if (hasErrors(changes))
                    throw SpecRejected(std::move(changes));
                resumeChanges = std::move(changes);
                specText = toToml(next);
            }
        } else {
            readSpecFile(opt.spec_path); // a directory, a missing or an empty file: SpecError naming it
            specText = readWholeFile(opt.spec_path);
            source = opt.spec_path;
        }
        spec = parseSpec(specText, source);
        std::vector<SpecIssue> issues = validateSpec(spec, thisMachine()); // unknown keys as warnings too
        if (hasErrors(issues))
            throw SpecRejected(std::move(issues));
        warnings = std::move(issues);
        warnings.insert(warnings.end(), resumeChanges.begin(), resumeChanges.end());
        // A launch that cannot be planned fails here, before a run exists.
        if (spec.launch.target == Target::Hosts)
            checkHosts();
        if (spec.launch.target == Target::Slurm) {
            std::vector<std::string> problems = slurmPreflight(spec);
            if (!problems.empty())
                throw PreflightFailed(std::move(problems));
        }
        if (spec.launch.target == Target::Slurm && opt.launch.slurm_mpi.empty() && !namesMpiPlugin(spec.launch.mpirun_args)) {
            // Which PMI plugin this Slurm offers Open MPI's ranks (pmix on Debian's).
            const std::vector<CommandResult> listed = runCommands({{"srun", "--mpi=list"}}, std::chrono::seconds(10));
            opt.launch.slurm_mpi = slurmMpiPlugin(listed[0].out + listed[0].err);
        }
        // A launch that cannot be planned fails here, before a run exists.
        LaunchContext probe = opt.launch;
        probe.spec_path = "spec.toml";
        probe.run_dir = "run";
        makeLaunchPlan(spec, probe);
    }

    // A run in a Slurm batch job whose supervisor is gone: its job is followed again.
    void prepareAttach(int64_t id) {
        const std::optional<RunRecord> r = store.run(id);
        const std::string name = "run " + std::to_string(id);
        if (!r)
            throw std::runtime_error("no run " + std::to_string(id) + " in " + store.path() + "; see parallax-cli ls");
        const std::optional<SlurmJob> j = store.slurmJob(id);
        if (!j || j->mode != "batch" || j->job_id.empty())
            throw std::runtime_error(name + " is not in a Slurm batch job (launch.slurm_mode = \"batch\"); only such a "
                                     "job goes on without its supervisor, to be followed again");
        if (RunState::isTerminal(r->state) && r->state != RunState::Lost)
            throw std::runtime_error(name + " has already ended (" + r->state + ")");
        host = opt.hostname.empty() ? hostName() : opt.hostname;
        if (r->supervisor_pid > 0 && r->state != RunState::Lost) {
            if (r->supervisor_host != host)
                throw std::runtime_error(name + " is followed by a supervisor on " + r->supervisor_host + " (pid " +
                                         std::to_string(r->supervisor_pid) + "); if it is gone, run parallax-cli "
                                         "attach " + std::to_string(id) + " there");
            if (pidAlive(r->supervisor_pid) && r->supervisor_pid != static_cast<int64_t>(getpid()))
                throw std::runtime_error(name + " is followed already (supervisor pid " +
                                         std::to_string(r->supervisor_pid) + " on " + host + ")");
        }
        specText = r->spec_toml;
        spec = parseSpec(specText, name);
        runId = id;
        runDir = r->run_dir;
        if (!takeFollowLock())
            throw std::runtime_error(name + " is followed already by another supervisor (it holds " +
                                     (runDir / "follow.lock").string() + ")");
        jobId = j->job_id;
        job.job = *j;
        batch = true;
        attaching = true;
    }

    // Before anything starts on hosts: every host answers ssh, has the same worker, and shares the
    // run folders; else PreflightFailed names each host and its fix, and no run is created.
    void checkHosts() {
        if (!opt.launch.cluster)
            opt.launch.cluster = resolveHosts(spec); // SpecError when the profile is missing or wrong
        std::error_code ec;
        fs::create_directories(folders().root(), ec);
        ::chmod(folders().root().c_str(), 0700);
        PreflightOptions po;
        po.local_worker = opt.launch.worker.empty() ? std::string("parallax-worker") : opt.launch.worker;
        po.shared_folder = folders().root();
        po.processes = spec.processCount();
        hostChecks = preflight(*opt.launch.cluster, po);
        std::vector<std::string> problems = preflightProblems(hostChecks);
        if (!problems.empty())
            throw PreflightFailed(std::move(problems));
    }

    RunFolders& folders() {
        if (!runFolders)
            runFolders = std::make_unique<RunFolders>(store, opt.runs_root);
        return *runFolders;
    }

    // A run may be resumed only once nothing of it runs any more: a second copy would train
    // beside the first and write into the same checkpoints.
    void requireEnded(const RunRecord& parent) {
        const std::string id = std::to_string(parent.id);
        const std::string here = opt.hostname.empty() ? hostName() : opt.hostname;
        if (!RunState::isTerminal(parent.state) && parent.supervisor_pid > 0) {
            if (parent.supervisor_host != here)
                throw std::runtime_error("run " + id + " is " + parent.state + " under a supervisor on " +
                                         parent.supervisor_host + " (pid " + std::to_string(parent.supervisor_pid) +
                                         "); stop it there first (parallax-cli stop " + id + ")");
            if (pidAlive(parent.supervisor_pid))
                throw std::runtime_error("run " + id + " is still " + parent.state + " (supervisor pid " +
                                         std::to_string(parent.supervisor_pid) + " on " + here +
                                         "); stop it first: parallax-cli stop " + id);
        }
        if (!parent.run_dir.empty()) {
            const std::vector<std::string> alive = processesOfRunFolder(parent.run_dir);
            if (!alive.empty())
                throw std::runtime_error("run " + id + " is " + parent.state + " but processes of it still run on " +
                                         here + ": " + joined(alive) + "; end them (kill PID) before resuming it");
        }
    }

    // Runs of this host whose supervisor died: recorded as lost, and their rows that output.log
    // holds but the store does not are imported.
    void recoverLostRuns() {
        try {
            if (!store.pendingCleanups().empty() && opt.on_pending_cleanup)
                opt.on_pending_cleanup(); // hosts of earlier runs that did not answer: tried again
        } catch (const std::exception&) {
        }
        for (const int64_t id : store.markLostRuns(host, pidAlive)) {
            try {
                const std::string done = recoverRunOutput(store, id, host);
                std::cerr << "parallax: " << done << "\n";
            } catch (const std::exception& e) {
                std::cerr << "parallax: run " << id << " was lost; its output was not imported: " << e.what() << "\n";
            }
        }
        try {
            for (const std::string& line : folders().migrateEarlierLayout())
                std::cerr << "parallax: run folders of " << store.path() << ": " << line << "\n";
        } catch (const std::exception& e) {
            std::cerr << "parallax: the run folders of " << store.path() << " were not moved to "
                      << folders().root() << ": " << e.what() << "\n";
        }
    }

    // ------------------------------------------------------------------ the run
    void create() {
        host = opt.hostname.empty() ? hostName() : opt.hostname;
        recoverLostRuns();
        NewRun nr;
        nr.name = spec.name;
        nr.spec_toml = specText;
        nr.model_kind = spec.model.kind.name();
        nr.layout = layoutLabel(spec.parallel);
        nr.steps_total = spec.train.steps;
        nr.world_size = static_cast<int>(spec.processCount());
        nr.parent_run = parentRun;
        nr.tags = opt.tags;
        runId = store.createRun(nr);
        writer = std::make_unique<BatchedWriter>(store, runId);
        for (const TelemetryEvent& e : opt.recorded_before) writer->add(e);
    }

    void setUpFolder() {
        const RunFolders::Created made = folders().create(runId);
        runDir = made.dir;
        if (!made.notice.empty())
            notice("warn", made.notice);
        writeWholeFile(runDir / "spec.toml", specText);
        outputLog = createPrivateFile(runDir / "output.log");
        std::setvbuf(outputLog, nullptr, _IOFBF, 1 << 20);
    }

    void notice(const std::string& level, const std::string& message) {
        LogRow row;
        row.t = wallNow();
        row.rank = -1;
        row.host = host;
        row.level = level;
        row.stream = "supervisor";
        row.message = message;
        addRow(row);
        if (opt.on_notice)
            opt.on_notice(level, message);
    }

    void addRow(const LogRow& row) {
        try {
            writer->add(row);
        } catch (const std::exception& e) {
            reportStoreError(e);
        }
    }

    void reportStoreError(const std::exception& e) {
        if (dynamic_cast<const StoreDamaged*>(&e)) {
            onStoreDamaged(e.what());
            return;
        }
        // The writer keeps rows it could not write; the next flush tries again.
        if (!storeErrorReported) {
            storeRefusal = e.what();
            storeRefusedSince = wallNow();
        }
        if (!storeErrorReported)
            std::cerr << "parallax: run " << runId << ": writing to " << store.path() << " failed (" << e.what()
                      << "); rows are kept and written when the store accepts them\n";
        storeErrorReported = true;
    }

    // No retry cures a damaged store: the ranks are asked to checkpoint and stop, as on a stop
    // request, and finish() ends the supervisor with the message. Every line stays in output.log.
    void onStoreDamaged(const std::string& what) {
        if (!storeDamage.empty())
            return;
        storeDamage = what;
        std::cerr << "parallax: run " << runId << ": " << what << "\nparallax: run " << runId
                  << " is being stopped: its ranks checkpoint and stop; its output stays in "
                  << (runDir / "output.log").string() << "\n";
        if (phase == StopPhase::None && (launcher.pid() > 0 || !jobId.empty())) {
            stopSignal = SIGTERM;
            advanceStop(false);
        }
    }

    // The ranks that run on `host` (from run_start), as "ranks 1, 3".
    std::string ranksOn(const std::string& host) const {
        std::string ranks;
        int count = 0;
        if (const std::optional<RunStartEvent> start = store.runStart(runId)) {
            for (size_t r = 0; r < start->hosts.size(); ++r) {
                const std::string& h = start->hosts[r];
                // ssh may know a host by a longer name than the host calls itself.
                const bool same = h == host || host.rfind(h + ".", 0) == 0 || h.rfind(host + ".", 0) == 0;
                if (!same) continue;
                ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
                ++count;
            }
        }
        if (count == 0) return "its ranks";
        return (count == 1 ? "rank " : "ranks ") + ranks;
    }

    // Probes every host; says when one falls silent and when it answers again, keeps each
    // host's state in the store, and ends the run when one stays silent past host_timeout_s.
    void watchHosts() {
        if (!hostWatch)
            return;
        hostWatch->poll();
        const Clock::time_point now = Clock::now();
        const auto timeout = std::chrono::seconds(spec.launch.host_timeout_s);
        const bool recordAll = now - lastHostRecord >= std::chrono::seconds(10);
        for (const HostWatch::Host& h : hostWatch->hosts()) {
            sayIfSshIsSlow(h);
            const auto silent = hostWatch->silentFor(h);
            const std::string state = silent >= timeout ? "lost" : silent >= kSilentNotice ? "silent" : "answering";
            std::string& was = hostStates[h.name];
            const bool changed = was != state;
            if (changed && state == "silent")
                notice("warn", h.name + " silent for " + std::to_string(silent.count() / 1000) + " s (" +
                                   (h.last_error.empty() ? std::string("ssh probes unanswered") : h.last_error) +
                                   "); the run fails if it stays silent for " +
                                   std::to_string(spec.launch.host_timeout_s) + " s");
            if (changed && state == "answering" && !was.empty())
                notice("info", h.name + " answers again");
            if (changed || recordAll) {
                try {
                    writer->add(hostWatch->status(h, state));
                } catch (const std::exception& e) {
                    reportStoreError(e);
                }
            }
            was = state;
            if (state == "lost" && hostLostReason.empty() && phase == StopPhase::None) {
                hostLostReason = h.name + " has not answered for " + std::to_string(silent.count() / 1000) + " s (" +
                                 ranksOn(h.name) + " run there" +
                                 (h.last_error.empty() ? std::string() : "; " + h.last_error) +
                                 "): the run was ended on every host";
                notice("error", hostLostReason);
                // mpirun never notices a host cut off: everything of the launch ends now, and the
                // hosts are cleaned once the launcher is gone.
                phase = StopPhase::Kill;
                killAll();
            }
        }
        if (recordAll)
            lastHostRecord = now;
    }

    // ssh's own cost, measured: a probe that takes a good part of host_timeout_s leaves the
    // probes alone too little room (the ranks' lines from the host count all the same).
    void sayIfSshIsSlow(const HostWatch::Host& h) {
        const double timeoutMs = 1000.0 * static_cast<double>(spec.launch.host_timeout_s);
        if (h.slowest_ms <= 0 || 3 * h.slowest_ms < timeoutMs || !slowSshSaid.insert(h.name).second)
            return;
        std::ostringstream said;
        said.precision(2);
        said << "ssh to " << h.name << " takes " << h.slowest_ms / 1000.0 << " s to answer a probe: launch.host_timeout_s = "
             << spec.launch.host_timeout_s << " is too tight for the probes alone (set it to at least "
             << static_cast<int64_t>(std::ceil(4 * h.slowest_ms / 1000.0))
             << " s); meanwhile the ranks' output from " << h.name << " counts as its sign of life too";
        notice("warn", said.str());
    }

    void onEvent(const TelemetryEvent& event) {
        if (const auto* checkpoint = std::get_if<CheckpointEvent>(&event))
            lastCheckpoint = checkpoint->step;
        if (!hangs)
            return;
        const Clock::time_point now = Clock::now();
        if (const auto* step = std::get_if<StepEvent>(&event))
            hangs->onStep(*step, now);
        else if (const auto* comm = std::get_if<CommEvent>(&event))
            hangs->onComm(*comm, now);
        else if (const auto* rankStep = std::get_if<RankStepEvent>(&event)) {
            hangs->onRankStep(*rankStep);
            rankStepsArrived = true;
        }
        else if (const auto* start = std::get_if<RunStartEvent>(&event)) {
            hangs->setWorld(start->world);
            hangs->setLayout(start->dp, start->tp, start->pp);
            // srun mode: the ranks name the job they run in; its state and time left are followed.
            if (!batch && spec.launch.target == Target::Slurm && jobId.empty() && !start->slurm_job.empty()) {
                jobId = start->slurm_job;
                jobRunningMarked = true; // the supervisor marked the run running when srun started
                lastJobQuery = Clock::now() - 5 * opt.slurm_poll;
            }
        }
    }

    void raise(const std::string& kind, const HangDetector::Finding& finding, bool active) {
        RunAlert a;
        a.kind = kind;
        a.message = finding.message;
        a.ranks = finding.ranks;
        a.step = finding.step;
        a.active = active;
        a.t = wallNow();
        try {
            writer->add(a);
        } catch (const std::exception& e) {
            reportStoreError(e);
        }
    }

    // Names a straggler as the ranks' steps arrive (it is found in steps, not seconds) and a hang
    // once a second; on_hang = "fail" ends a hang that lasts.
    void checkHangs() {
        if (!hangs)
            return;
        const Clock::time_point now = Clock::now();
        if (dumpDeadline && now >= *dumpDeadline) {
            dumpDeadline.reset();
            phase = StopPhase::Kill;
            killAll();
        }
        if (phase != StopPhase::None)
            return;
        if (rankStepsArrived) {
            rankStepsArrived = false;
            checkStraggler();
        }
        if (now - lastHangCheck < std::chrono::seconds(1))
            return;
        lastHangCheck = now;
        const std::optional<HangDetector::Finding> hang = hangs->hang(now);
        if (hang) {
            if (!hangSince)
                hangSince = now;
            // Said at once, and again each minute while it lasts (with its growing times).
            if (hangMessage.empty() || now - lastHangSaid >= std::chrono::seconds(60)) {
                notice("warn", "hang: " + hang->message);
                lastHangSaid = now;
            }
            if (hang->message != hangMessage)
                raise("hang", *hang, true);
            hangMessage = hang->message;
            hangFinding = *hang;
            const auto lasted = now - *hangSince;
            if (spec.telemetry.on_hang == OnHang::Fail && lasted >= std::chrono::seconds(spec.telemetry.hang_timeout_s)) {
                hangFailReason = "hang: " + hang->message + "; the run was ended after " +
                                 std::to_string(spec.telemetry.hang_timeout_s) +
                                 " s (telemetry.on_hang = \"fail\"); each rank's flight recorder is in " +
                                 (runDir / "flight-rank<R>.json").string() +
                                 " (a stopped rank cannot write its own)";
                notice("error", hangFailReason);
                HangDetector::Finding failed = *hang;
                failed.message = hangFailReason;
                raise("hang", failed, true);
                // The ranks write their rings on SIGUSR2 (mpirun passes it on), then everything ends.
                signalRanks(SIGUSR2);
                dumpDeadline = now + std::chrono::seconds(3);
                phase = StopPhase::Terminate;
                deadline = now + std::chrono::seconds(5);
            }
        } else if (hangSince) {
            notice("info", "steps again after the hang named above");
            raise("hang", hangFinding, false);
            hangSince.reset();
            hangMessage.clear();
        }
    }

    void checkStraggler() {
        const std::optional<HangDetector::Finding> straggler = hangs->straggler();
        // Said when another rank becomes the straggler, and again only after a minute: a
        // straggler that comes and goes between steps is one finding, not one line per step.
        const Clock::time_point now = Clock::now();
        if (straggler && (straggler->ranks != stragglerSaidRanks || now - stragglerSaidAt >= std::chrono::minutes(1))) {
            notice("warn", "straggler: " + straggler->message);
            stragglerSaidRanks = straggler->ranks;
            stragglerSaidAt = now;
        }
        if (straggler && straggler->message != stragglerMessage)
            raise("straggler", *straggler, true);
        else if (!straggler && !stragglerMessage.empty())
            raise("straggler", stragglerFinding, false);
        stragglerMessage = straggler ? straggler->message : std::string();
        if (straggler)
            stragglerFinding = *straggler;
    }

    // Ends what is left of the run on every host; a host that does not answer is kept in the
    // store, to be cleaned once it answers (parallax-cli cleanup, started in the background).
    void cleanUpOnHosts() {
        if (!opt.launch.cluster || spec.launch.target != Target::Hosts)
            return;
        std::vector<HostSweepJob> jobs;
        for (const std::string& entry : opt.launch.cluster->hosts) {
            const std::optional<HostSlots> h = parseHostSlots(entry);
            jobs.push_back({h ? h->name : entry, opt.launch.cluster->ssh, {runDir.string()}});
        }
        bool pending = false;
        for (const HostCleanupResult& r : cleanUpHosts(jobs, cleanupLockFolder(store.path()))) {
            if (r.reached) {
                if (r.ended > 0)
                    notice("warn", r.host + ": ended " + std::to_string(r.ended) +
                                       " process(es) of the run that were still running there");
                continue;
            }
            notice("warn", r.host + ": cannot end the run's processes there now (" +
                               (r.answered ? "it answered with an error: " : std::string()) + r.error +
                               "); that is done as soon as it answers again (parallax-cli cleanup)");
            try {
                PendingCleanup c;
                c.run = runId;
                c.host = r.host;
                c.run_dir = runDir.string();
                c.last_error = r.error;
                store.addPendingCleanup(c);
                pending = true;
            } catch (const std::exception& e) {
                reportStoreError(e);
            }
        }
        if (pending && opt.on_pending_cleanup)
            opt.on_pending_cleanup();
    }

    void beat() {
        if (!heartbeat)
            return;
        heartbeat->beat();
        if (!heartbeat->failure().empty() && !heartbeatFailureReported) {
            heartbeatFailureReported = true;
            notice("error", "cannot update " + heartbeat->path() + " (" + heartbeat->failure() +
                                "): the ranks end themselves if it stays unchanged for 30 s");
        } else if (heartbeat->failure().empty()) {
            heartbeatFailureReported = false;
        }
    }

    // After a failed write: says once that the store takes rows again, and imports what was only
    // spooled to output.log meanwhile.
    void afterStoreWrite() {
        if (writer->pendingRows() != 0 || writer->failingSince())
            return;
        if (router && router->spooling()) {
            router->flushRawLog();
            const std::optional<RunRecord> record = store.run(runId);
            if (!record)
                return;
            try {
                // From the store's offset, not the router's: an import cut short by the store
                // committed its first batches, and goes on after them.
                // A bounded piece per turn of the loop, so that the heartbeat and the pipes are
                // served meanwhile; the router spools on until the import has caught up.
                const int64_t from = store.outputOffset(runId).value_or(0);
                const int64_t to = std::min(router->rawBytes(), from + kImportPerTurn);
                const OutputImport done = importOutput(store, *record, from, to);
                spoolImported += done.rows;
                if (done.to < router->rawBytes() && done.to > from)
                    return;
                notice("warn", "the store refused rows for a while; " + std::to_string(spoolImported) +
                                   " row(s) kept meanwhile in output.log only were imported from it");
            } catch (const StoreError&) {
                throw;
            } catch (const std::exception& e) {
                notice("error", "lines kept in output.log while the store refused rows could not be imported: " +
                                    std::string(e.what()));
            }
            spoolImported = 0;
            router->resumeStoring();
        }
        if (storeErrorReported) {
            storeErrorReported = false;
            std::cerr << "parallax: run " << runId << ": " << store.path() << " takes rows again\n";
            // Said on the terminal while the store refused rows; now the run's log keeps it too.
            notice("warn", "the store refused rows for " + std::to_string(static_cast<int>(wallNow() - storeRefusedSince)) +
                               " s (" + storeRefusal + "); they were kept meanwhile and are all written now");
        }
    }

    void flushStore(bool force) {
        if (!storeDamage.empty())
            return;
        try {
            if (force)
                writer->flush();
            else
                writer->maybeFlush();
            afterStoreWrite();
        } catch (const std::exception& e) {
            reportStoreError(e);
        }
    }

    std::string hostOfRank(int rank) const {
        if (router)
            return router->hostOfRank(rank);
        return rank < 0 || spec.launch.target == Target::Local ? host : std::string();
    }

    // Reads what is there (bounded, so that one busy pipe cannot starve the rest of the loop).
    // Returns false at end of file.
    bool readPipe(int fd, OutputStream pipe) {
        static thread_local std::vector<char> buffer(1 << 16);
        for (int i = 0; i < 64; ++i) {
            const ssize_t n = ::read(fd, buffer.data(), buffer.size());
            if (n > 0) {
                router->append(pipe, buffer.data(), static_cast<size_t>(n), wallNow());
                if (static_cast<size_t>(n) < buffer.size())
                    return true;
                continue;
            }
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                return true;
            router->finishPipe(pipe, wallNow()); // end of file, or an error that ends the pipe all the same
            return false;
        }
        return true;
    }

    // ------------------------------------------------------------------ stopping
    std::string launcherName() const {
        return batch ? "Slurm job " + jobId : plan.argv.empty() ? std::string("the launcher") : plan.argv.front();
    }

    // A signal to every rank: through the launcher, which passes it on, or to a batch job's steps.
    void signalRanks(int sig) {
        if (!batch) {
            launcher.signal(sig);
            return;
        }
        if (jobId.empty())
            return;
        const std::string name = signalName(sig).substr(3); // "SIGUSR1" -> "USR1"
        const std::string problem = slurmEndState(job.job.state) ? std::string() : signalSlurmJob(jobId, name);
        if (!problem.empty())
            notice("error", "cannot signal the ranks of Slurm job " + jobId + ": " + problem);
    }
    // Everything of the launch ends now: SIGKILL to the launcher's processes, or the job cancelled
    // (Slurm sends its steps SIGTERM, then SIGKILL after its KillWait).
    void killAll() {
        if (!batch) {
            killedLeftovers += launcher.killAll();
            return;
        }
        if (jobId.empty())
            return;
        const std::string problem = cancelSlurmJob(jobId);
        if (!problem.empty())
            notice("error", "cannot cancel Slurm job " + jobId + ": " + problem);
    }

    void advanceStop(bool byDeadline) {
        const Clock::time_point now = Clock::now();
        switch (phase) {
        case StopPhase::None:
            phase = StopPhase::Graceful;
            deadline = now + opt.stop_grace;
            if (batch && job.job.state == "PENDING") {
                // Nothing runs yet, so nothing to checkpoint: the job leaves the queue.
                phase = StopPhase::Kill;
                notice("warn", "stop requested (" + signalName(stopSignal) + ") while " + launcherName() +
                                   " waits in the queue: it is cancelled");
                killAll();
                break;
            }
            signalRanks(SIGUSR1);
            notice("warn", "stop requested (" + signalName(stopSignal) + "): SIGUSR1 to " + launcherName() +
                               " asks the ranks to checkpoint and stop; SIGTERM in " + seconds(opt.stop_grace));
            break;
        case StopPhase::Graceful:
            phase = StopPhase::Terminate;
            deadline = now + opt.term_grace;
            if (batch)
                killAll();
            else
                launcher.signal(SIGTERM);
            notice("warn", std::string(byDeadline ? "the ranks did not stop within " + seconds(opt.stop_grace)
                                                  : std::string("stop requested again")) +
                               ": SIGTERM to " + launcherName() + "; SIGKILL in " + seconds(opt.term_grace));
            break;
        case StopPhase::Terminate:
            phase = StopPhase::Kill;
            notice("warn", std::string(byDeadline ? launcherName() + " did not exit within " + seconds(opt.term_grace)
                                                  : std::string("stop requested again")) +
                               ": SIGKILL to every process of the launch");
            if (batch)
                signalRanks(SIGKILL);
            else
                killedLeftovers += launcher.killAll();
            break;
        case StopPhase::Kill:
            break;
        }
    }

    // Returns whether a stop request was read.
    bool readStopRequests() {
        unsigned char bytes[16];
        bool any = false;
        for (;;) {
            const ssize_t n = ::read(stopPipe[0], bytes, sizeof bytes);
            if (n <= 0)
                break;
            for (ssize_t i = 0; i < n; ++i) {
                if (stopSignal == 0)
                    stopSignal = bytes[i];
                any = true;
                if (launcher.pid() > 0 || !jobId.empty())
                    advanceStop(false);
            }
        }
        return any;
    }

    // ------------------------------------------------------------------ the loop
    Clock::time_point lastProgress = Clock::now() - std::chrono::hours(1);
    double startedAt = wallNow();
    void reportProgress(bool force) {
        if (!opt.on_progress)
            return;
        const Clock::time_point now = Clock::now();
        if (!force && now - lastProgress < opt.progress_interval)
            return;
        if (!router->takeStepChanged())
            return;
        lastProgress = now;
        SupervisorProgress p;
        p.run_id = runId;
        p.steps_total = spec.train.steps;
        p.last_step = router->lastStep();
        p.started_at = startedAt;
        p.stopping = phase != StopPhase::None;
        opt.on_progress(p);
    }

    void supervise() {
        Clock::time_point lastOutputFlush = Clock::now();

        while (!launcher.tryWait()) {
            pollfd fds[3];
            nfds_t count = 0;
            int outIndex = -1;
            int errIndex = -1;
            if (launcher.stdoutFd() >= 0) {
                outIndex = static_cast<int>(count);
                fds[count++] = {launcher.stdoutFd(), POLLIN, 0};
            }
            if (launcher.stderrFd() >= 0) {
                errIndex = static_cast<int>(count);
                fds[count++] = {launcher.stderrFd(), POLLIN, 0};
            }
            const int stopIndex = static_cast<int>(count);
            fds[count++] = {stopPipe[0], POLLIN, 0};

            std::chrono::milliseconds timeout = kWaitCheckEvery;
            if (const auto due = writer->timeUntilDue())
                timeout = std::min(timeout, *due);
            if (phase == StopPhase::Graceful || phase == StopPhase::Terminate) {
                const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
                timeout = std::min(timeout, std::max(left, std::chrono::milliseconds(0)));
            }
            const int ready = ::poll(fds, count, static_cast<int>(timeout.count()));
            if (ready < 0 && errno != EINTR)
                throw std::runtime_error(std::string("poll failed: ") + std::strerror(errno));
            if (ready > 0) {
                if (outIndex >= 0 && fds[outIndex].revents && !readPipe(fds[outIndex].fd, OutputStream::Stdout))
                    launcher.closeStdout();
                if (errIndex >= 0 && fds[errIndex].revents && !readPipe(fds[errIndex].fd, OutputStream::Stderr))
                    launcher.closeStderr();
                if (fds[stopIndex].revents)
                    readStopRequests();
            }
            if ((phase == StopPhase::Graceful || phase == StopPhase::Terminate) && Clock::now() >= deadline)
                advanceStop(true);
            flushStore(false);
            beat();
            watchHosts();
            checkHangs();
            if (!jobId.empty())
                queryJob(false); // srun mode: the job's state and time left
            reportProgress(false);
            if (Clock::now() - lastOutputFlush >= kOutputFlushEvery) {
                router->flushRawLog();
                lastOutputFlush = Clock::now();
            }
        }

        // The launcher is gone: nothing of the launch may outlive it.
        killedLeftovers += launcher.killAll();
        const Clock::time_point drainEnd = Clock::now() + kDrainLimit;
        while ((launcher.stdoutFd() >= 0 || launcher.stderrFd() >= 0) && Clock::now() < drainEnd) {
            pollfd fds[2];
            nfds_t count = 0;
            if (launcher.stdoutFd() >= 0)
                fds[count++] = {launcher.stdoutFd(), POLLIN, 0};
            if (launcher.stderrFd() >= 0)
                fds[count++] = {launcher.stderrFd(), POLLIN, 0};
            if (::poll(fds, count, 100) <= 0)
                continue;
            for (nfds_t i = 0; i < count; ++i) {
                if (!fds[i].revents)
                    continue;
                const bool isOut = fds[i].fd == launcher.stdoutFd();
                if (!readPipe(fds[i].fd, isOut ? OutputStream::Stdout : OutputStream::Stderr)) {
                    if (isOut)
                        launcher.closeStdout();
                    else
                        launcher.closeStderr();
                }
            }
        }
        router->finish(wallNow());
        reportProgress(true);
        router->flushRawLog();
    }

    // ------------------------------------------------------------------ a batch job
    // One supervisor follows a job at a time: two would write its rows twice.
    bool takeFollowLock() {
        followLock = ::open((runDir / "follow.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        if (followLock < 0)
            throw std::runtime_error("cannot open " + (runDir / "follow.lock").string() + ": " + std::strerror(errno));
        return ::flock(followLock, LOCK_EX | LOCK_NB) == 0;
    }

    // Submits the job: its script into the run folder, sbatch with the allocation's options.
    void submitJob() {
        takeFollowLock();
        const fs::path script = runDir / "job.sh";
        writeWholeFile(script, plan.script);
        ::chmod(script.c_str(), 0700);
        jobId = submitSlurmJob(plan.submit, plan.env);
        job = {};
        job.job.job_id = jobId;
        job.job.mode = "batch";
        job.job.state = "PENDING";
        store.setSlurmJob(runId, job.job);
        store.setSupervisor(runId, static_cast<int64_t>(getpid()), host);
        notice("info", "supervisor " + std::to_string(getpid()) + " on " + host + " submitted Slurm job " + jobId +
                           " (" + plan.commandLine() + "); it runs " + script.string() +
                           " and goes on if this supervisor ends: parallax-cli attach " + std::to_string(runId) +
                           " follows it again");
    }

    // What Slurm says of the job, kept in the store when it changed (the time left: each minute).
    void queryJob(bool force) {
        const Clock::time_point now = Clock::now();
        // srun mode asks less often and waits less: the same loop reads the ranks' pipes.
        if (!force && now - lastJobQuery < (batch ? opt.slurm_poll : 5 * opt.slurm_poll))
            return;
        lastJobQuery = now;
        SlurmJobStatus st = querySlurmJob(jobId, batch ? std::chrono::seconds(10) : std::chrono::seconds(3));
        if (!st.known) {
            if (job.known || job.error != st.error)
                notice("warn", "Slurm does not say how job " + jobId + " is (" + st.error + ")");
            job.error = st.error;
            job.known = false;
            return;
        }
        jobLastKnown = now;
        st.job.mode = batch ? "batch" : "srun";
        st.job.t = wallNow();
        const std::string said = st.job.state + "|" + st.job.reason + "|" + st.job.nodes + "|" +
                                 std::to_string(st.job.queue_position) + "|" +
                                 std::to_string(st.job.time_left_s < 0 ? -1 : st.job.time_left_s / 60);
        if (said != jobRecorded) {
            if (st.job.state != job.job.state || st.job.reason != job.job.reason)
                notice("info", "Slurm job " + jobId + ": " + st.job.state +
                                   (st.job.reason.empty() ? std::string() : " (" + st.job.reason + ")") +
                                   (st.job.queue_position > 0 ? ", place " + std::to_string(st.job.queue_position) +
                                                                    " in the queue"
                                                              : std::string()) +
                                   (st.job.nodes.empty() ? std::string() : " on " + st.job.nodes));
            try {
                store.setSlurmJob(runId, st.job);
                jobRecorded = said;
            } catch (const StoreError& e) {
                reportStoreError(e);
            }
        }
        if (!jobRunningMarked && st.job.state != "PENDING") {
            try {
                store.markRunning(runId, static_cast<int64_t>(getpid()), host);
                jobRunningMarked = true;
            } catch (const StoreError& e) {
                reportStoreError(e);
            }
        }
        job = std::move(st);
    }

    // Reads what the job wrote to output.log since the last call. Returns whether there was any.
    bool readJobOutput() {
        if (jobFd < 0) {
            jobFd = ::open((runDir / "output.log").c_str(), O_RDONLY | O_CLOEXEC);
            if (jobFd < 0)
                return false;
            if (::lseek(jobFd, static_cast<off_t>(jobRead), SEEK_SET) < 0)
                throw std::runtime_error("cannot seek to byte " + std::to_string(jobRead) + " of " +
                                         (runDir / "output.log").string() + ": " + std::strerror(errno));
        }
        static thread_local std::vector<char> buffer(1 << 16);
        bool any = false;
        for (int i = 0; i < 64; ++i) {
            const ssize_t n = ::read(jobFd, buffer.data(), buffer.size());
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                break;
            router->append(OutputStream::Stdout, buffer.data(), static_cast<size_t>(n), wallNow());
            jobRead += n;
            any = true;
        }
        return any;
    }

    // Follows the job to its end: its state, its output, stop requests, hangs.
    void followJob() {
        queryJob(true);
        for (;;) {
            pollfd fds[1] = {{stopPipe[0], POLLIN, 0}};
            std::chrono::milliseconds timeout(250);
            if (const auto due = writer->timeUntilDue())
                timeout = std::min(timeout, *due);
            if (::poll(fds, 1, static_cast<int>(timeout.count())) > 0 && fds[0].revents)
                readStopRequests();
            readJobOutput();
            if ((phase == StopPhase::Graceful || phase == StopPhase::Terminate) && Clock::now() >= deadline)
                advanceStop(true);
            queryJob(false);
            if (job.known && slurmEndState(job.job.state))
                break;
            // Slurm forgets an ended job after its MinJobAge (a job that ended while nobody
            // followed it): then the ranks' run_end tells, or a minute of Slurm not knowing it.
            if (!job.known && (router->runEnd() || Clock::now() - jobLastKnown > std::chrono::seconds(60)))
                break;
            flushStore(false);
            checkHangs();
            reportProgress(false);
        }
        // Slurm said the job ended: what it wrote last may reach the (network) file a moment later.
        const Clock::time_point quietUntil = Clock::now() + std::chrono::seconds(5);
        for (Clock::time_point lastData = Clock::now(); Clock::now() < quietUntil;) {
            if (readJobOutput())
                lastData = Clock::now();
            else if (router->runEnd() || Clock::now() - lastData > std::chrono::seconds(1))
                break;
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        router->finishPipe(OutputStream::Stdout, wallNow());
        router->finish(wallNow());
        reportProgress(true);
    }

    // ------------------------------------------------------------------ the end
    struct Outcome {
        std::string state;
        std::optional<int> exitCode;
        std::string reason;
    };

    // output.log is complete: the rows that follow come from the supervisor alone.
    void closeOutputLog() {
        if (!outputLog)
            return;
        if (router) {
            router->flushRawLog();
            router->setRawLog(nullptr);
        }
        std::fclose(outputLog);
        outputLog = nullptr;
    }

    [[noreturn]] void failOnDamagedStore(const Outcome& o) {
        closeOutputLog();
        throw StoreDamaged(storeDamage + ". Run " + std::to_string(runId) + " " + o.state +
                           (o.reason.empty() ? std::string() : " (" + o.reason + ")") +
                           "; none of it after the damage was recorded: its spec and whole output are in " +
                           runDir.string() + ", which parallax-cli --store NEW.db import " + runDir.string() +
                           " brings into a new store");
    }

    Outcome decide() const {
        const int status = launcher.status().value_or(0);
        Outcome o;
        if (WIFEXITED(status))
            o.exitCode = WEXITSTATUS(status);
        else if (WIFSIGNALED(status))
            o.exitCode = 128 + WTERMSIG(status);
        const bool clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
        const bool stopRequested = phase != StopPhase::None;
        const std::optional<RunEndEvent>& runEnd = router->runEnd();

        for (const std::string* reason : {&hostLostReason, &hangFailReason}) {
            if (reason->empty())
                continue;
            o.state = RunState::Failed;
            o.reason = *reason;
            return o;
        }
        if (clean && stoppedByTimeLimit()) {
            o.state = RunState::Failed;
            o.reason = timeLimitReason() + checkpointSaid();
            return o;
        }
        if (clean && runEnd) {
            o.state = runEnd->status;
            o.reason = runEnd->reason;
            if (o.reason.empty() && o.state == RunState::Failed)
                o.reason = "the worker reported a failure without a reason";
            if (o.state == RunState::Stopped && stopRequested && o.reason.empty())
                o.reason = "stopped on request (" + signalName(stopSignal) + ")";
            return o;
        }
        if (stopRequested) {
            o.state = RunState::Stopped;
            o.reason = "stopped on request (" + signalName(stopSignal) + ")";
            if (phase == StopPhase::Terminate)
                o.reason += "; the ranks were terminated (SIGTERM) before they finished stopping";
            else if (phase == StopPhase::Kill)
                o.reason += "; the ranks were killed (SIGKILL) before they finished stopping";
            else if (runEnd && !runEnd->reason.empty())
                o.reason += ": " + runEnd->reason;
            return o;
        }
        o.state = RunState::Failed;
        const std::optional<LauncherFailure>& f = router->failure();
        const bool rankReportedWhy = runEnd && runEnd->status == RunState::Failed && !runEnd->reason.empty();
        if (rankReportedWhy &&
            (!f || f->kind == LauncherFailure::Kind::ExitCode || f->kind == LauncherFailure::Kind::Abort)) {
            // The ranks ended on an error they reported themselves (and exited or aborted after
            // it): their words say what happened, the launcher's only how they left.
            o.reason = runEnd->reason;
            return o;
        }
        if (f)
            o.reason = f->describe(hostOfRank(f->rank));
        else if (clean)
            o.reason = "the ranks exited with code 0 without reporting the end of the run (no run_end event)";
        else if (WIFSIGNALED(status))
            o.reason = launcherName() + " was killed by signal " + std::to_string(WTERMSIG(status)) + " (" +
                       signalName(WTERMSIG(status)) + ")";
        else
            o.reason = launcherName() + " exited with code " + std::to_string(WEXITSTATUS(status));
        if (runEnd && runEnd->status == RunState::Failed && !runEnd->reason.empty())
            o.reason += ": " + runEnd->reason;
        return o;
    }

    // launch.on_host_failure = "resume": a run that failed by a lost host or a dead rank (not by a
    // stop, a hang ended by on_hang = "fail", or its own error) goes on from the newest checkpoint
    // on the hosts that answer; its reason says how, or why it cannot.
    Outcome planContinuation(Outcome o) {
        if (o.state != RunState::Failed || spec.launch.target != Target::Hosts || spec.launch.on_host_failure != OnHostFailure::Resume ||
            !opt.launch.cluster || !hangFailReason.empty() || (phase != StopPhase::None && hostLostReason.empty()))
            return o;
        const std::optional<RunEndEvent>& runEnd = router->runEnd();
        if (hostLostReason.empty() && runEnd && runEnd->status == RunState::Failed)
            return o; // the ranks failed on an error of their own: it would fail again
        const std::string why = "; launch.on_host_failure = \"resume\": ";
        if (opt.restarts_done >= spec.launch.max_restarts) {
            o.reason += why + "launch.max_restarts = " + std::to_string(spec.launch.max_restarts) +
                        " restart(s) are used up, so it does not go on";
            return o;
        }
        std::vector<std::string> answering, lost;
        for (const std::string& entry : opt.launch.cluster->hosts) {
            const std::optional<HostSlots> h = parseHostSlots(entry);
            const std::string name = h ? h->name : entry;
            const auto state = hostStates.find(name);
            if (state != hostStates.end() && state->second != "answering")
                lost.push_back(name);
            else
                answering.push_back(entry);
        }
        // From this run's newest checkpoint, or, when it wrote none, from the one it resumed.
        int64_t from = runId;
        if (!lastCheckpoint) {
            if (!parentRun || resumeDir.empty()) {
                o.reason += why + "no checkpoint was written to continue from (train.checkpoint_every = " +
                            std::to_string(spec.train.checkpoint_every) + ")";
                return o;
            }
            from = *parentRun;
        }
        ContinuationResult planned = parallax::planContinuation(spec, answering, lost);
        if (!planned.plan) {
            o.reason += why + "it cannot go on: " + planned.error;
            return o;
        }
        planned.plan->from_run = from;
        o.reason += why + "it goes on from " +
                    (lastCheckpoint ? "the checkpoint at step " + std::to_string(*lastCheckpoint)
                                    : "the newest checkpoint of run " + std::to_string(from)) +
                    ", " + planned.plan->said;
        continuation = planned.plan;
        return o;
    }

    // The ranks stopped by themselves in a job with a time limit: Slurm's USR1, sent
    // launch.signal_margin_s before the limit (--signal), made them checkpoint and stop.
    bool stoppedByTimeLimit() const {
        const std::optional<RunEndEvent>& runEnd = router->runEnd();
        return phase == StopPhase::None && spec.launch.target == Target::Slurm && !spec.launch.time_limit.empty() &&
               spec.launch.signal_margin_s > 0 && runEnd && runEnd->status == RunState::Stopped;
    }
    std::string checkpointSaid() const {
        return lastCheckpoint ? "; the newest checkpoint is at step " + std::to_string(*lastCheckpoint) +
                                    " (parallax-cli resume " + std::to_string(runId) + " continues from it)"
                              : std::string("; no checkpoint was written");
    }
    std::string timeLimitReason() const {
        return "the job reached its time limit (" +
               (spec.launch.time_limit.empty() ? std::string("the partition's")
                                               : "launch.time_limit = " + spec.launch.time_limit) +
               (spec.launch.signal_margin_s > 0 && !spec.launch.time_limit.empty()
                    ? "; Slurm's USR1 came launch.signal_margin_s = " + std::to_string(spec.launch.signal_margin_s) +
                          " s before it"
                    : std::string()) +
               ")";
    }

    // How a batch job's run ended: the ranks' own report where Slurm says the job completed, else
    // Slurm's state mapped to the run's (slurmEndStates), with Slurm's words kept.
    Outcome decideBatch() const {
        Outcome o;
        const bool stopRequested = phase != StopPhase::None;
        const std::optional<RunEndEvent>& runEnd = router->runEnd();
        const SlurmEndState* end = job.known ? slurmEndState(job.job.state) : nullptr;
        const bool completed = end && std::string(end->state) == "COMPLETED";
        if (job.known) {
            // ExitCode=code:signal, of the job's batch script (exec srun: the ranks' worst).
            const size_t colon = job.exit_code.find(':');
            try {
                const int code = std::stoi(job.exit_code.substr(0, colon));
                const int sig = colon == std::string::npos ? 0 : std::stoi(job.exit_code.substr(colon + 1));
                o.exitCode = sig > 0 ? 128 + sig : code;
            } catch (const std::exception&) {
            }
        }
        const std::string slurmSays =
            "Slurm job " + jobId + ": " +
            (job.known ? job.job.state + (job.job.reason.empty() ? std::string() : ", reason " + job.job.reason) +
                             (job.exit_code.empty() ? std::string() : ", exit code " + job.exit_code)
                       : "no longer known to Slurm (" + job.error + ")");
        const std::string checkpointNote = checkpointSaid();
        if (!hangFailReason.empty()) {
            o.state = RunState::Failed;
            o.reason = hangFailReason;
            return o;
        }
        if ((end && std::string(end->state) == "TIMEOUT") || stoppedByTimeLimit()) {
            o.state = RunState::Failed;
            o.reason = timeLimitReason() + checkpointNote + "; " + slurmSays;
            return o;
        }
        if (runEnd && (completed || !job.known)) {
            o.state = runEnd->status;
            o.reason = runEnd->reason;
            if (o.state == RunState::Stopped && stopRequested)
                o.reason = "stopped on request (" + signalName(stopSignal) + ")";
            if (o.reason.empty() && o.state == RunState::Failed)
                o.reason = "the worker reported a failure without a reason";
            return o;
        }
        if (stopRequested && (!end || completed || std::string(end->state) == "CANCELLED")) {
            o.state = RunState::Stopped;
            o.reason = "stopped on request (" + signalName(stopSignal) + ")";
            if (phase == StopPhase::Terminate || phase == StopPhase::Kill)
                o.reason += "; the job was cancelled before the ranks finished stopping";
            o.reason += checkpointNote;
            return o;
        }
        o.state = RunState::Failed;
        if (runEnd && runEnd->status == RunState::Failed && !runEnd->reason.empty())
            o.reason = runEnd->reason + "; ";
        if (!end)
            o.reason += "the ranks did not report the end of the run";
        else if (completed)
            o.reason += "the job completed without the ranks reporting the end of the run (no run_end event)";
        else
            o.reason += end->says;
        if (const std::optional<LauncherFailure>& f = router->failure(); f && !(runEnd && !runEnd->reason.empty()))
            o.reason += "; " + f->describe(hostOfRank(f->rank));
        o.reason += checkpointNote + "; " + slurmSays;
        return o;
    }

    RunRecord finish(const Outcome& o) {
        if (!storeDamage.empty())
            failOnDamagedStore(o);
        const double endedAt = wallNow(); // not when a busy store took the end
        notice(o.state == RunState::Failed ? "error" : "info",
               "run " + o.state + (o.reason.empty() ? std::string() : ": " + o.reason) +
                   (o.exitCode ? " (launcher exit code " + std::to_string(*o.exitCode) + ")" : std::string()));
        closeOutputLog();
        // The store may be locked by others, or full, for as long as it takes: the run's rows and
        // its end are written once it takes them. Only a stop request gives up, leaving the rows
        // that output.log holds for parallax-cli import (or the next supervisor) to bring in.
        writer->setRetryAfter(kEndRetryAfter);
        const Clock::time_point waitStart = Clock::now();
        for (bool told = false;;) {
            if (told)
                store.setBusyTimeout(kEndBusyTimeoutMs); // the first attempt is quick, to say so at once
            try {
                writer->flush();
                // The ranks are done: the spooled lines are imported all at once, piece by piece.
                for (int64_t before = -1; router && router->spooling();) {
                    const int64_t at = store.outputOffset(runId).value_or(0);
                    if (at == before)
                        throw StoreError("the import of the rows kept in output.log makes no progress at byte " +
                                         std::to_string(at));
                    before = at;
                    afterStoreWrite();
                }
                writer->flush(); // what the import said
                store.finishRun(runId, o.state, o.exitCode, o.reason, endedAt);
                break;
            } catch (const StoreDamaged& e) {
                onStoreDamaged(e.what());
                failOnDamagedStore(o);
            } catch (const StoreError& e) {
                if (!told)
                    std::cerr << "parallax: run " << runId << " " << o.state << ", but " << store.path()
                              << " does not take its rows (" << e.what() << "); " << writer->pendingRows()
                              << " row(s) wait. Waiting for the store as long as it takes; a stop request "
                                 "(Ctrl-C) leaves them for parallax-cli import "
                              << runId << "\n";
                told = true;
                unsigned char byte = 0;
                if (::read(stopPipe[0], &byte, 1) == 1)
                    throw StoreError("run " + std::to_string(runId) + " " + o.state + ", but its rows and its end "
                                     "were not written to " + store.path() + " (" + e.what() + "); they are in " +
                                     (runDir / "output.log").string() + ": run parallax-cli import " +
                                     std::to_string(runId) + " once the store takes writes again");
                std::this_thread::sleep_for(kEndRetryAfter);
            }
        }
        if (Clock::now() - waitStart > std::chrono::seconds(5)) {
            const std::string said =
                "the store took the run's last rows and its end " +
                std::to_string(std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - waitStart).count()) +
                " s after the run ended (it refused them meanwhile)";
            std::cerr << "parallax: run " << runId << ": " << said << "\n";
            LogRow row;
            row.t = wallNow();
            row.rank = -1;
            row.host = host;
            row.level = "warn";
            row.stream = "supervisor";
            row.message = said;
            try {
                store.insertLog(runId, row);
            } catch (const StoreError&) {
                // The run's end is recorded; this line is only a remark about it.
            }
        }
        const std::optional<RunRecord> record = store.run(runId);
        if (!record)
            throw StoreError("run " + std::to_string(runId) + " vanished from " + store.path() + " while it ran");
        return *record;
    }
};

Supervisor::Supervisor(RunStore& store, SupervisorOptions options)
    : m_state(std::make_unique<State>(store, std::move(options))) {}

Supervisor::~Supervisor() = default;

int64_t Supervisor::runId() const { return m_state->runId; }

std::optional<ContinuationPlan> Supervisor::continuation() const { return m_state->continuation; }

void Supervisor::requestStop() {
    const unsigned char byte = SIGTERM;
    [[maybe_unused]] const ssize_t n = ::write(m_state->stopPipe[1], &byte, 1);
}

RunRecord Supervisor::run() {
    State& s = *m_state;
    s.prepare();
    if (!s.attaching)
        s.create();

    std::optional<StopSignalHandler> signals;
    if (s.opt.handle_signals)
        signals.emplace(s.stopPipe[1]);

    try {
        if (s.attaching) {
            s.writer = std::make_unique<BatchedWriter>(s.store, s.runId);
        } else {
            s.setUpFolder();
            for (const SpecIssue& w : s.warnings)
                s.notice("warn", "spec: " + w.field + ": " + w.message);
            for (const HostCheck& c : s.hostChecks) {
                s.notice("info", "preflight: " + c.host + " (" + c.hostname + ") answers in " +
                                     std::to_string(static_cast<int>(c.latency_ms)) + " ms, " +
                                     std::to_string(c.cores) + " cores, " +
                                     ("worker sha256 " + c.worker_build.substr(0, 12)));
                for (const std::string& note : c.notes)
                    s.notice("warn", "preflight: " + note);
            }
            if (s.parentRun)
                s.notice("info", "resuming run " + std::to_string(*s.parentRun) + " from " + s.resumeDir);

            LaunchContext context = s.opt.launch;
            context.spec_path = (s.runDir / "spec.toml").string();
            context.run_dir = s.runDir.string();
            context.resume_dir = s.resumeDir;
            s.plan = makeLaunchPlan(s.spec, context);
            s.batch = !s.plan.submit.empty();
        }
        const LauncherFormat format = s.attaching ? LauncherFormat::Slurm : s.plan.format;
        s.router = std::make_unique<OutputRouter>(*s.writer, format, s.host, s.spec.launch.target == Target::Local);
        if (s.batch) {
            // Slurm writes output.log itself; the store's offset is how far into it the rows are.
            if (s.outputLog) {
                std::fclose(s.outputLog);
                s.outputLog = nullptr;
            }
            if (s.attaching) {
                s.jobRead = s.store.outputOffset(s.runId).value_or(0);
                if (const std::optional<RunStartEvent> start = s.store.runStart(s.runId))
                    s.router->setRankHosts(start->hosts);
            }
            s.writer->setOutputOffsetSource(
                [&s] { return s.jobRead - static_cast<int64_t>(s.router->pendingBytes(OutputStream::Stdout)); });
        } else {
            s.router->setRawLog(s.outputLog, (s.runDir / "output.log").string());
            s.router->setSpoolAbove(s.opt.spool_above);
            s.writer->setOutputOffsetSource([&s] { return s.router->storedThrough(); });
        }
        s.router->setErrorHandler([&s](const std::exception& e) { s.reportStoreError(e); });
        HangDetector::Options hangOptions;
        hangOptions.hang_after = std::chrono::seconds(s.spec.telemetry.hang_after_s);
        s.hangs = std::make_unique<HangDetector>(hangOptions);
        s.hangs->setWorld(static_cast<int>(s.spec.processCount()));
        s.hangs->setLayout(static_cast<int>(s.spec.parallel.dp), static_cast<int>(s.spec.parallel.tp),
                           static_cast<int>(s.spec.parallel.pp));
        s.hangs->setHostOf([&s](int rank) { return s.router->hostOfRank(rank); });
        s.router->setEventHandler([&s](const TelemetryEvent& e) { s.onEvent(e); });
        s.router->setRawLogErrorHandler([&s](const std::string& what) { s.notice("error", "output.log: " + what); });
        if (s.opt.on_rank_warning)
            s.router->setRankWarningHandler([&s](const LogEvent& e) {
                s.opt.on_rank_warning(e.level, "rank " + std::to_string(e.rank) + ": " + e.message);
            });
        s.writer->setRetryAfter(kLiveRetryAfter);
        if (!s.attaching) {
            s.store.setLaunchCommand(s.runId, s.plan.commandLine());
            for (const std::string& w : s.plan.warnings)
                s.notice("warn", w);
        }
        if (s.opt.on_created) {
            if (const std::optional<RunRecord> record = s.store.run(s.runId))
                s.opt.on_created(*record);
        }

        if (s.batch) {
            if (s.attaching) {
                s.store.setSupervisor(s.runId, static_cast<int64_t>(getpid()), s.host);
                s.notice("info", "supervisor " + std::to_string(getpid()) + " on " + s.host + " follows Slurm job " +
                                     s.jobId + " again, from byte " + std::to_string(s.jobRead) + " of " +
                                     (s.runDir / "output.log").string());
            } else {
                if (s.readStopRequests())
                    return s.finish({RunState::Stopped, std::nullopt,
                                      "stopped on request (" + signalName(s.stopSignal) + ") before the launch"});
                s.submitJob();
            }
            s.store.setBusyTimeout(kLiveBusyTimeoutMs);
            s.followJob();
            return s.finish(s.decideBatch());
        }

        if (s.readStopRequests())
            return s.finish({RunState::Stopped, std::nullopt,
                             "stopped on request (" + signalName(s.stopSignal) + ") before the launch"});

        s.heartbeat.emplace(s.runDir.string());
        const int rc = s.launcher.start(s.plan.argv, s.plan.env);
        if (rc != 0) {
            const std::string& name = s.plan.argv.front();
            const std::string reason =
                rc == ENOENT ? "launcher not found: " + name + " (install " +
                                   (s.plan.format == LauncherFormat::Slurm ? "slurm-client" : "openmpi-bin") + ")"
                             : "cannot start the launcher " + name + ": " + std::strerror(rc);
            return s.finish({RunState::Failed, 127, reason});
        }
        s.store.markRunning(s.runId, static_cast<int64_t>(getpid()), s.host);
        s.notice("info", "supervisor " + std::to_string(getpid()) + " on " + s.host + " started " +
                             s.plan.argv.front() + " (pid " + std::to_string(s.launcher.pid()) +
                             "): " + s.plan.commandLine());
        if (s.opt.launch.cluster && s.spec.launch.target == Target::Hosts) {
            s.hostWatch = std::make_unique<HostWatch>(*s.opt.launch.cluster,
                                                      "/tmp/parallax-ssh-" + std::to_string(getpid()), s.runDir.string());
            // The ranks name their host as it calls itself; preflight learnt each one's name.
            for (const HostCheck& c : s.hostChecks)
                s.hostWatch->addAlias(c.hostname, c.host);
            s.router->setRankLineHandler([&s](int rank) {
                if (s.hostWatch)
                    s.hostWatch->sawRankOn(s.router->hostOfRank(rank));
            });
        }
        s.store.setBusyTimeout(kLiveBusyTimeoutMs);
        s.supervise();
        s.heartbeat->finish();
        s.hostWatch.reset();
        s.cleanUpOnHosts();
        if (s.killedLeftovers > 0)
            s.notice("warn", "killed " + std::to_string(s.killedLeftovers) +
                                 " process(es) of the launch that outlived the launcher");
        return s.finish(s.planContinuation(s.decide()));
    } catch (const StoreError& e) {
        // Nothing of the run can be recorded: nothing of it goes on either.
        s.killAll();
        if (s.heartbeat)
            s.heartbeat->finish();
        throw;
    } catch (const std::exception& e) {
        // The run exists: it must not stay "running" with nobody watching it, nor its job go on.
        s.killAll();
        if (s.batch && !s.jobId.empty())
            s.notice("error", "Slurm job " + s.jobId + " was cancelled: its supervisor cannot follow it");
        if (s.heartbeat)
            s.heartbeat->finish();
        if (!s.writer)
            throw;
        return s.finish({RunState::Failed, std::nullopt, std::string("supervisor error: ") + e.what()});
    }
}

} // namespace parallax
