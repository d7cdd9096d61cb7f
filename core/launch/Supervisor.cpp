#include "core/launch/Supervisor.h"

#include "core/launch/AlertCenter.h"
#include "core/launch/DiskBudget.h"
#include "core/launch/EventRouter.h"
#include "core/launch/HangDetector.h"
#include "core/launch/HostStates.h"
#include "core/launch/HostWatch.h"
#include "core/launch/LauncherControl.h"
#include "core/launch/LauncherOutput.h"
#include "core/launch/LauncherProcess.h"
#include "core/launch/OutputRetention.h"
#include "core/launch/OutputRouter.h"
#include "core/launch/RawOutput.h"
#include "core/launch/RunCreation.h"
#include "core/launch/RunHostSweep.h"
#include "core/launch/RunNotices.h"
#include "core/launch/RunOutcome.h"
#include "core/launch/RunPreparation.h"
#include "core/launch/SignalNames.h"
#include "core/launch/SlurmBatchFollower.h"
#include "core/launch/StopEscalation.h"
#include "core/launch/StopSignalHandler.h"
#include "core/launch/StoreFlusher.h"
#include "core/launch/TelemetryThinner.h"
#include "core/launch/SupervisorHeartbeat.h"
#include "core/spec/SpecValidator.h"
#include "core/util/HostName.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace parallax {

using Clock = std::chrono::steady_clock;

namespace {

constexpr auto kOutputFlushEvery = std::chrono::seconds(1);
constexpr auto kWaitCheckEvery = std::chrono::milliseconds(100);
constexpr auto kDrainLimit = std::chrono::seconds(5);

double wallNow() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The ranks that run on `host` (from run_start), as "ranks 1, 3".
std::string ranksOn(const RunStore& store, int64_t runId, const std::string& host) {
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

} // namespace

// The parts of one run, wired. Its LaunchControl is the launch a stop reaches: the batch job
// (SlurmBatchFollower) or the launcher here (LauncherControl), whichever this run has.
struct Supervisor::State : LaunchControl {
    State(RunStore& s, SupervisorOptions o)
        : store(s), opt(std::move(o)), host(opt.hostname.empty() ? hostName() : opt.hostname),
          notices(host, [this](const LogRow& row) { if (flusher) flusher->add(row); }, opt.on_notice),
          stops(*this, notices, opt.stop_grace, opt.term_grace), folders(s, opt.runs_root) {}
    ~State() {
        // The writer's last flush asks the router how far output.log is stored: it goes first.
        flusher.reset();
        if (rawWriter)
            rawWriter->finish();
        if (outputLog)
            std::fclose(outputLog);
    }

    RunStore& store;
    SupervisorOptions opt;
    std::string host;
    RunNotices notices;
    StopEscalation stops;
    RunFolders folders;

    PreparedRun prepared; // the spec, what a resume continues, preflight, the launch drafted
    std::optional<AttachedRun> attached; // parallax-cli attach: the batch job followed again
    int64_t runId = 0;
    std::string runDir;
    std::FILE* outputLog = nullptr;
    std::unique_ptr<RawOutputWriter> rawWriter; // compresses what goes into outputLog
    std::unique_ptr<OutputRetention> outputRetention; // removes the oldest segments once stored
    std::unique_ptr<DiskBudget> diskBudget;           // retention.disk_budget_gb
    std::unique_ptr<TelemetryThinner> thinner;        // retention.raw_telemetry_minutes
    LaunchPlan plan;
    bool batch = false;

    std::unique_ptr<OutputRouter> router;
    std::unique_ptr<StoreFlusher> flusher; // once the run exists
    std::unique_ptr<HangDetector> hangs;
    std::unique_ptr<AlertCenter> alerts;
    std::unique_ptr<EventRouter> events;
    LauncherProcess launcher;
    std::unique_ptr<LauncherControl> launcherControl;
    std::unique_ptr<LauncherOutput> launcherOutput;
    std::optional<SupervisorHeartbeat> heartbeat; // the ranks' sign that this supervisor lives
    bool heartbeatFailureReported = false;
    std::unique_ptr<HostWatch> hostWatch;   // target = "hosts"
    std::unique_ptr<HostStates> hostStates;
    std::string hostLostReason;
    std::unique_ptr<SlurmBatchFollower> follower; // target = "slurm": the job the run runs in
    std::optional<ContinuationPlan> continuation; // launch.on_host_failure = "resume"
    Clock::time_point lastProgress = Clock::now() - std::chrono::hours(1);
    double startedAt = wallNow();

    const RunSpec& spec() const { return prepared.spec.spec; }
    const RetentionSpec& retentionSpec() const { return opt.retention ? *opt.retention : spec().retention; }
    void notice(LogLevel::Value level, const std::string& message) { notices.notice(level, message); }

    // ------------------------------------------------------------------ before the run exists
    void prepare() {
        // A damaged file takes rows only to lose them: nothing starts on it.
        store.requireIntact();
        RunPreparation preparation(store, folders, host, opt.launch);
        if (opt.attach_run) {
            attach(preparation.attach(*opt.attach_run));
        } else if (opt.resume_run) {
            prepared = preparation.resume(*opt.resume_run, opt.resume_spec_path, opt.resume_sets);
        } else {
            prepared = preparation.newRun(opt.spec ? *opt.spec : checkSpecFile(opt.spec_path));
        }
    }

    // A run in a Slurm batch job whose supervisor is gone: its job is followed again.
    void attach(AttachedRun run) {
        prepared.spec.spec = run.spec;
        prepared.spec.text = run.run.spec_toml;
        runId = run.run.id;
        runDir = run.run.run_dir;
        follower = std::make_unique<SlurmBatchFollower>(store, runId, runDir, host, true, notices, slurmCommands(),
                                                        opt.slurm_poll);
        if (!follower->takeFollowLock())
            throw std::runtime_error("run " + std::to_string(runId) + " is followed already by another supervisor (it "
                                     "holds " + runDir + "/follow.lock)");
        attached = std::move(run);
        batch = true;
    }

    // ------------------------------------------------------------------ the run
    void create() {
        recoverLostRuns(store, folders, host, opt.on_pending_cleanup);
        runId = createRunRecord(store, prepared, opt.tags);
        openFlusher();
        for (const TelemetryEvent& e : opt.recorded_before) flusher->writer().add(e);
    }

    void openFlusher() {
        flusher = std::make_unique<StoreFlusher>(store, runId, host, notices);
        flusher->setRunDir(runDir);
        flusher->setDamageHandler([this](const std::string&) { stops.begin(SIGTERM, Clock::now()); });
    }

    // The run's folder and what was found before it existed; the launch bound to its paths.
    void openFolder() {
        const RunFolder folder = createRunFolder(folders, runId, prepared.spec.text, prepared.draft.batch);
        runDir = folder.dir;
        outputLog = folder.output_log;
        flusher->setRunDir(runDir);
        if (!folder.notice.empty())
            notice(LogLevel::Warn, folder.notice);
        for (const std::string& line : issueLines(prepared.spec.warnings, true))
            notice(LogLevel::Warn, "spec: " + line);
        for (const HostCheck& c : prepared.host_checks) {
            notice(LogLevel::Info, "preflight: " + c.host + " (" + c.hostname + ") answers in " +
                               std::to_string(static_cast<int>(c.latency_ms)) + " ms, " + std::to_string(c.cores) +
                               " cores, " + ("worker sha256 " + c.worker_build.substr(0, 12)));
            for (const std::string& note : c.notes)
                notice(LogLevel::Warn, "preflight: " + note);
        }
        if (prepared.parent_run)
            notice(LogLevel::Info, "resuming run " + std::to_string(*prepared.parent_run) + " from " + prepared.resume_dir);
        plan = prepared.draft.forRun(runDir + "/spec.toml", runDir, prepared.resume_dir);
        batch = !plan.submit.empty();
        if (spec().launch.target == Target::Slurm)
            follower = std::make_unique<SlurmBatchFollower>(store, runId, runDir, host, batch, notices,
                                                            slurmCommands(), opt.slurm_poll);
    }

    // The launcher's output through the router into the store; the events to the alerts.
    void route() {
        const LauncherFormat format = attached ? LauncherFormat::Slurm : plan.format;
        router = std::make_unique<OutputRouter>(flusher->writer(), format, host, spec().launch.target == Target::Local);
        if (batch) {
            // Slurm writes output.log itself; the store's offset is how far into it the rows are.
            if (outputLog) {
                std::fclose(outputLog);
                outputLog = nullptr;
            }
            if (attached) {
                follower->resume(attached->job, store.outputOffset(runId).value_or(0));
                if (const std::optional<RunStartEvent> start = store.runStart(runId))
                    router->setRankHosts(start->hosts);
            }
            flusher->writer().setOutputOffsetSource([this] {
                return follower->bytesRead() - static_cast<int64_t>(router->pendingBytes(OutputStream::Stdout));
            });
        } else {
            if (outputLog) {
                rawWriter = std::make_unique<RawOutputWriter>(outputLog);
                keepOutputSegments();
            }
            router->setRawLog(rawWriter.get(), runDir + "/" + kCompressedOutputName);
            router->setSpoolAbove(opt.spool_above);
            flusher->writer().setOutputOffsetSource([this] { return router->storedThrough(); });
        }
        if (follower)
            follower->setStoreErrorHandler([this](const std::exception& e) { flusher->reportError(e); });
        flusher->setRouter(router.get());
        router->setErrorHandler([this](const std::exception& e) { flusher->reportError(e); });
        setUpAlerts();
        router->setRawLogErrorHandler([this](const std::string& what) { notice(LogLevel::Error, "output.log: " + what); });
        if (opt.on_rank_warning)
            router->setRankWarningHandler([this](const LogEvent& e) {
                opt.on_rank_warning(LogLevel::fromName(e.level), "rank " + std::to_string(e.rank) + ": " + e.message);
            });
    }

    void setUpAlerts() {
        HangDetector::Options hangOptions;
        hangOptions.hang_after = std::chrono::seconds(spec().telemetry.hang_after_s);
        hangs = std::make_unique<HangDetector>(hangOptions);
        hangs->setWorld(static_cast<int>(spec().processCount()));
        hangs->setLayout(static_cast<int>(spec().parallel.dp), static_cast<int>(spec().parallel.tp),
                         static_cast<int>(spec().parallel.pp));
        hangs->setHostOf([this](int rank) { return router->hostOfRank(rank); });
        AlertCenter::HangPolicy policy;
        policy.fail = spec().telemetry.on_hang == OnHang::Fail;
        policy.fail_after = std::chrono::seconds(spec().telemetry.hang_timeout_s);
        policy.flight_recorders = runDir + "/flight-rank<R>.json";
        alerts = std::make_unique<AlertCenter>(*hangs, notices, [this](const RunAlert& a) { flusher->add(a); },
                                               policy);
        events = std::make_unique<EventRouter>(*hangs, *alerts);
        if (!batch && spec().launch.target == Target::Slurm)
            // srun mode: the ranks name the job they run in; its state and time left are followed.
            events->setSlurmJobHandler([this](const std::string& id) { follower->adopt(id, Clock::now()); });
        router->setEventHandler([this](const TelemetryEvent& e) { events->onEvent(e, Clock::now()); });
        diskBudget = std::make_unique<DiskBudget>(retentionSpec().disk_budget_gb, runDir, store.path(), notices,
                                                  [this](const RunAlert& a) { flusher->add(a); }, opt.disk_check_every);
        thinner = std::make_unique<TelemetryThinner>(store, flusher->writer(), runId,
                                                     60.0 * double(retentionSpec().raw_telemetry_minutes), notices);
    }

    // retention.output_segment_mb and output_keep_mb: the output in segments, the oldest removed once
    // their rows are stored. The store is asked how far that is only while it takes rows.
    void keepOutputSegments() {
        constexpr int64_t kMiB = 1 << 20;
        rawWriter->setSegments(runDir, saturatingMul(retentionSpec().output_segment_mb, kMiB));
        outputRetention = std::make_unique<OutputRetention>(
            *rawWriter, saturatingMul(retentionSpec().output_keep_mb, kMiB), notices, [this]() -> std::optional<int64_t> {
                if (flusher->writer().failingSince() || router->spooling()) return std::nullopt;
                try {
                    return store.outputOffset(runId);
                } catch (const std::exception&) {
                    return std::nullopt;
                }
            });
    }

    void announce() {
        if (!attached) {
            store.setLaunchCommand(runId, plan.commandLine());
            for (const std::string& w : plan.warnings)
                notice(LogLevel::Warn, w);
        }
        if (opt.on_created) {
            if (const std::optional<RunRecord> record = store.run(runId))
                opt.on_created(*record);
        }
    }

    std::optional<RunRecord> stoppedBeforeTheLaunch() {
        if (!stops.readRequests(Clock::now()))
            return std::nullopt;
        return finish({RunState::Stopped, std::nullopt,
                       "stopped on request (" + signalName(stops.signal()) + ") before the launch"});
    }

    // ------------------------------------------------------------------ a launcher here
    RunRecord launchHere() {
        if (std::optional<RunRecord> stopped = stoppedBeforeTheLaunch())
            return *stopped;
        heartbeat.emplace(runDir);
        launcherControl = std::make_unique<LauncherControl>(launcher, plan.argv.front());
        const int rc = launcher.start(plan.argv, plan.env);
        if (rc != 0) {
            const std::string& name = plan.argv.front();
            return finish({RunState::Failed, 127,
                           rc == ENOENT ? "launcher not found: " + name + " (install " +
                                              (plan.format == LauncherFormat::Slurm ? "slurm-client" : "openmpi-bin") + ")"
                                        : "cannot start the launcher " + name + ": " + std::strerror(rc)});
        }
        store.markRunning(runId, static_cast<int64_t>(getpid()), host);
        notice(LogLevel::Info, "supervisor " + std::to_string(getpid()) + " on " + host + " started " + plan.argv.front() +
                           " (pid " + std::to_string(launcher.pid()) + "): " + plan.commandLine());
        if (prepared.launch.cluster && spec().launch.target == Target::Hosts)
            watchHosts();
        flusher->beginLive();
        launcherOutput = std::make_unique<LauncherOutput>(launcher, *router);
        supervise();
        heartbeat->finish();
        hostWatch.reset();
        cleanUpOnHosts();
        if (launcherControl->killed() > 0)
            notice(LogLevel::Warn, "killed " + std::to_string(launcherControl->killed()) +
                               " process(es) of the launch that outlived the launcher");
        return finish(continueAfter(decideRunOutcome(endFacts())));
    }

    // target = "hosts": a watch of its own on every host, whose states are said and kept, and
    // which ends the run when a host stays silent past host_timeout_s.
    void watchHosts() {
        hostWatch = std::make_unique<HostWatch>(*prepared.launch.cluster, "/tmp/parallax-ssh-" + std::to_string(getpid()),
                                                runDir);
        // The ranks name their host as it calls itself; preflight learnt each one's name.
        for (const HostCheck& c : prepared.host_checks)
            hostWatch->addAlias(c.hostname, c.host);
        router->setRankLineHandler([this](int rank) {
            if (hostWatch)
                hostWatch->sawRankOn(router->hostOfRank(rank));
        });
        hostStates = std::make_unique<HostStates>(
            spec().launch.host_timeout_s, notices, [this](const HostStatus& h) { flusher->add(h); },
            [this](const std::string& h) { return ranksOn(store, runId, h); });
    }

    void supervise() {
        Clock::time_point lastOutputFlush = Clock::now();
        while (!launcher.tryWait()) {
            std::vector<pollfd> fds;
            launcherOutput->addTo(fds);
            fds.push_back({stops.pollFd(), POLLIN, 0});
            std::chrono::milliseconds timeout = kWaitCheckEvery;
            if (const auto due = flusher->writer().timeUntilDue())
                timeout = std::min(timeout, *due);
            if (const auto left = stops.timeLeft(Clock::now()))
                timeout = std::min(timeout, *left);
            const int ready = ::poll(fds.data(), fds.size(), static_cast<int>(timeout.count()));
            if (ready < 0 && errno != EINTR)
                throw std::runtime_error(std::string("poll failed: ") + std::strerror(errno));
            if (ready > 0) {
                launcherOutput->read(fds);
                if (fds.back().revents)
                    stops.readRequests(Clock::now());
            }
            turn();
            if (Clock::now() - lastOutputFlush >= kOutputFlushEvery) {
                router->flushRawLog();
                if (outputRetention)
                    outputRetention->prune();
                lastOutputFlush = Clock::now();
            }
        }
        // The launcher is gone: nothing of the launch may outlive it.
        launcherControl->killAll();
        launcherOutput->drain(kDrainLimit);
        router->finish(wallNow());
        reportProgress(true);
        router->flushRawLog();
    }

    // What every turn of the supervising loop does besides reading the launcher's output.
    void turn() {
        stops.tick(Clock::now());
        flusher->flush(false);
        beat();
        if (hostWatch) {
            hostWatch->poll();
            if (const std::optional<std::string> lost =
                    hostStates->review(hostWatch->look(), Clock::now(), !stops.stopping())) {
                hostLostReason = *lost;
                // mpirun never notices a host cut off: everything of the launch ends now, and the
                // hosts are cleaned once the launcher is gone.
                stops.endNow();
            }
        }
        checkHangs();
        if (diskBudget)
            diskBudget->check(Clock::now());
        if (thinner)
            thinner->poll(Clock::now(), wallNow());
        if (follower && !follower->jobId().empty())
            follower->query(false, Clock::now()); // srun mode: the job's state and time left
        reportProgress(false);
    }

    void beat() {
        heartbeat->beat();
        if (!heartbeat->failure().empty() && !heartbeatFailureReported) {
            heartbeatFailureReported = true;
            notice(LogLevel::Error, "cannot update " + heartbeat->path() + " (" + heartbeat->failure() +
                                "): the ranks end themselves if it stays unchanged for 30 s");
        } else if (heartbeat->failure().empty()) {
            heartbeatFailureReported = false;
        }
    }

    // Names stragglers and hangs; on_hang = "fail" ends a hang that lasts.
    void checkHangs() {
        if (stops.stopping())
            return;
        const Clock::time_point now = Clock::now();
        if (alerts->check(now))
            stops.dumpThenEnd(now); // the ranks write their rings on SIGUSR2, then everything ends
    }

    void reportProgress(bool force) {
        const Clock::time_point now = Clock::now();
        if (!opt.on_progress || (!force && now - lastProgress < opt.progress_interval) || !router->takeStepChanged())
            return;
        lastProgress = now;
        SupervisorProgress p;
        p.run_id = runId;
        p.steps_total = spec().train.steps;
        p.last_step = router->lastStep();
        p.started_at = startedAt;
        p.stopping = stops.stopping();
        opt.on_progress(p);
    }

    // Ends what is left of the run on every host; a host that does not answer is cleaned once it
    // answers (parallax-cli cleanup, started in the background).
    void cleanUpOnHosts() {
        if (!prepared.launch.cluster || spec().launch.target != Target::Hosts)
            return;
        const bool pending = sweepRunHosts(store, *prepared.launch.cluster, runId, runDir, notices,
                                           [this](const std::exception& e) { flusher->reportError(e); });
        if (pending && opt.on_pending_cleanup)
            opt.on_pending_cleanup();
    }

    // ------------------------------------------------------------------ a batch job
    RunRecord followBatch() {
        if (attached) {
            store.setSupervisor(runId, static_cast<int64_t>(getpid()), host);
            notice(LogLevel::Info, "supervisor " + std::to_string(getpid()) + " on " + host + " follows Slurm job " +
                               follower->jobId() + " again, from byte " + std::to_string(follower->bytesRead()) +
                               " of " + runDir + "/output.log");
        } else {
            if (std::optional<RunRecord> stopped = stoppedBeforeTheLaunch())
                return *stopped;
            follower->submit(plan);
        }
        flusher->beginLive();
        follower->query(true, Clock::now());
        for (;;) {
            pollfd fds[1] = {{stops.pollFd(), POLLIN, 0}};
            std::chrono::milliseconds timeout(250);
            if (const auto due = flusher->writer().timeUntilDue())
                timeout = std::min(timeout, *due);
            if (::poll(fds, 1, static_cast<int>(timeout.count())) > 0 && fds[0].revents)
                stops.readRequests(Clock::now());
            follower->readOutput(*router);
            stops.tick(Clock::now());
            follower->query(false, Clock::now());
            if (follower->over(*router, Clock::now()))
                break;
            flusher->flush(false);
            checkHangs();
            reportProgress(false);
        }
        follower->readLastOutput(*router);
        router->finishPipe(OutputStream::Stdout, wallNow());
        router->finish(wallNow());
        reportProgress(true);
        return finish(decideBatchOutcome(endFacts()));
    }

    // ------------------------------------------------------------------ the end
    RunEndFacts endFacts() const {
        RunEndFacts f;
        f.spec = spec();
        f.run_id = runId;
        f.stop_phase = stops.phase();
        f.stop_signal = stops.signal();
        f.host_lost_reason = hostLostReason;
        f.hang_fail_reason = alerts->failReason();
        f.last_checkpoint = events->lastCheckpoint();
        f.run_end = router->runEnd();
        f.failure = router->failure();
        if (f.failure)
            f.failure_host = router->hostOfRank(f.failure->rank);
        f.launcher_name = name();
        f.launcher_status = launcher.status().value_or(0);
        if (follower) {
            f.job = follower->job();
            f.job_id = follower->jobId();
        }
        return f;
    }

    RunOutcome continueAfter(const RunOutcome& o) {
        ContinuationFacts c;
        if (prepared.launch.cluster)
            c.cluster_hosts = prepared.launch.cluster->hosts;
        if (hostStates)
            c.host_states = hostStates->states();
        c.restarts_done = opt.restarts_done;
        c.parent_run = prepared.parent_run;
        c.resume_dir = prepared.resume_dir;
        return planContinuation(o, endFacts(), c, continuation);
    }

    // output.log is complete: the rows that follow come from the supervisor alone.
    void closeOutputLog() {
        if (!outputLog)
            return;
        if (router) {
            router->flushRawLog();
            router->setRawLog(nullptr);
        }
        if (rawWriter && !rawWriter->finish())
            notice(LogLevel::Warn, "output.log.gz: " + std::string(std::strerror(errno)) +
                                       " ending the file; it reads up to its last flush");
        outputRetention.reset();
        rawWriter.reset();
        std::fclose(outputLog);
        outputLog = nullptr;
    }

    RunRecord finish(const RunOutcome& o) {
        if (flusher->damaged()) {
            closeOutputLog();
            throw flusher->damagedError(o);
        }
        const double endedAt = wallNow(); // not when a busy store took the end
        notice(o.state == RunState::Failed ? LogLevel::Error : LogLevel::Info,
               "run " + runStateName(o.state) + (o.reason.empty() ? std::string() : ": " + o.reason) +
                   (o.exit_code ? " (launcher exit code " + std::to_string(*o.exit_code) + ")" : std::string()));
        closeOutputLog();
        return flusher->finishRun(o, endedAt, [this] { return stops.takeRequest(); });
    }

    // The run exists but its supervisor cannot go on: nothing of the launch may go on either.
    void abandon() {
        killAll();
        if (heartbeat)
            heartbeat->finish();
    }

    // ------------------------------------------------------------------ the launch a stop reaches
    LaunchControl* launch() const {
        return batch ? static_cast<LaunchControl*>(follower.get()) : launcherControl.get();
    }
    bool launched() const override { return launch() && launch()->launched(); }
    bool queued() const override { return launch() && launch()->queued(); }
    std::string name() const override {
        return launch() ? launch()->name() : plan.argv.empty() ? std::string("the launcher") : plan.argv.front();
    }
    void signalRanks(int sig) override {
        if (launch()) launch()->signalRanks(sig);
    }
    void terminate() override {
        if (launch()) launch()->terminate();
    }
    void killRanks() override {
        if (launch()) launch()->killRanks();
    }
    void killAll() override {
        if (launch()) launch()->killAll();
    }
};

Supervisor::Supervisor(RunStore& store, SupervisorOptions options)
    : m_state(std::make_unique<State>(store, std::move(options))) {}

Supervisor::~Supervisor() = default;

int64_t Supervisor::runId() const { return m_state->runId; }

std::optional<ContinuationPlan> Supervisor::continuation() const { return m_state->continuation; }

void Supervisor::requestStop() { m_state->stops.request(SIGTERM); }

RunRecord Supervisor::run() {
    State& s = *m_state;
    s.prepare();
    if (!s.attached)
        s.create();
    std::optional<StopSignalHandler> signals;
    if (s.opt.handle_signals)
        signals.emplace(s.stops.requestFd());
    try {
        if (s.attached)
            s.openFlusher();
        else
            s.openFolder();
        s.route();
        s.announce();
        return s.batch ? s.followBatch() : s.launchHere();
    } catch (const StoreError&) {
        // Nothing of the run can be recorded: nothing of it goes on either.
        s.abandon();
        throw;
    } catch (const std::exception& e) {
        // The run exists: it must not stay "running" with nobody watching it, nor its job go on.
        s.abandon();
        if (s.batch && !s.follower->jobId().empty())
            s.notice(LogLevel::Error, "Slurm job " + s.follower->jobId() + " was cancelled: its supervisor cannot follow it");
        if (!s.flusher)
            throw;
        return s.finish({RunState::Failed, std::nullopt, std::string("supervisor error: ") + e.what()});
    }
}

} // namespace parallax
