#include "core/launch/Supervisor.h"

#include "core/launch/LauncherProcess.h"
#include "core/launch/OutputRouter.h"
#include "core/launch/SignalNames.h"
#include "core/launch/SpecRejected.h"
#include "core/launch/StopSignalHandler.h"
#include "core/spec/SpecIO.h"
#include "core/spec/SpecValidator.h"
#include "core/store/BatchedWriter.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

namespace parallax {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

constexpr auto kOutputFlushEvery = std::chrono::seconds(1);
constexpr auto kWaitCheckEvery = std::chrono::milliseconds(100);
constexpr auto kDrainLimit = std::chrono::seconds(5);

double wallNow() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string localHostname() {
    char buf[256] = {};
    if (gethostname(buf, sizeof buf - 1) != 0)
        return "localhost";
    return buf;
}

std::string layoutText(const RunSpec& spec) {
    return "dp" + std::to_string(spec.parallel.dp) + " tp" + std::to_string(spec.parallel.tp) + " pp" +
           std::to_string(spec.parallel.pp) + " zero" + std::to_string(spec.parallel.zero);
}

std::string seconds(std::chrono::milliseconds d) {
    std::ostringstream s;
    s << d.count() / 1000.0 << " s";
    return s.str();
}

bool pidAlive(int64_t pid) {
    if (pid <= 0)
        return false;
    return kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

std::string readWholeFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw SpecError(path + ": cannot read the spec file: " + std::strerror(errno));
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

void writeWholeFile(const fs::path& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out)
        throw std::runtime_error("cannot write " + path.string() + ": " + std::strerror(errno));
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
        ::close(stopPipe[0]);
        ::close(stopPipe[1]);
    }

    RunStore& store;
    SupervisorOptions opt;
    int stopPipe[2] = {-1, -1};

    RunSpec spec;
    std::string specText;
    std::vector<SpecIssue> warnings;
    std::optional<int64_t> parentRun;
    std::string resumeDir;
    std::string host;
    int64_t runId = 0;
    fs::path runDir;
    FILE* outputLog = nullptr;
    std::unique_ptr<BatchedWriter> writer;

    LaunchPlan plan;
    std::unique_ptr<OutputRouter> router;
    bool storeErrorReported = false;

    LauncherProcess launcher;
    StopPhase phase = StopPhase::None;
    int stopSignal = 0;
    Clock::time_point deadline;
    int killedLeftovers = 0;

    // ------------------------------------------------------------------ before the run exists
    void prepare() {
        std::string source;
        if (opt.resume_run) {
            const std::optional<RunRecord> parent = store.run(*opt.resume_run);
            if (!parent)
                throw std::runtime_error("no run " + std::to_string(*opt.resume_run) + " in " + store.path() +
                                         "; see parallax-cli ls");
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
        } else {
            specText = readWholeFile(opt.spec_path);
            source = opt.spec_path;
        }
        spec = parseSpec(specText, source);
        std::vector<SpecIssue> issues = validateSpec(spec);
        if (hasErrors(issues))
            throw SpecRejected(std::move(issues));
        warnings = std::move(issues);
        // A launch that cannot be planned fails here, before a run exists.
        LaunchContext probe = opt.launch;
        probe.spec_path = "spec.toml";
        probe.run_dir = "run";
        makeLaunchPlan(spec, probe);
    }

    // ------------------------------------------------------------------ the run
    void create() {
        host = opt.hostname.empty() ? localHostname() : opt.hostname;
        store.markLostRuns(host, pidAlive);
        NewRun nr;
        nr.name = spec.name;
        nr.spec_toml = specText;
        nr.model_kind = spec.model.kind;
        nr.layout = layoutText(spec);
        nr.steps_total = spec.train.steps;
        nr.world_size = static_cast<int>(spec.processCount());
        nr.parent_run = parentRun;
        nr.tags = opt.tags;
        runId = store.createRun(nr);
        writer = std::make_unique<BatchedWriter>(store, runId);
    }

    void setUpFolder() {
        const fs::path root = opt.runs_root.empty()
                                  ? fs::absolute(fs::path(store.path())).parent_path() / "runs"
                                  : fs::absolute(fs::path(opt.runs_root));
        runDir = root / std::to_string(runId);
        fs::create_directories(runDir);
        store.setRunDir(runId, runDir.string());
        writeWholeFile(runDir / "spec.toml", specText);
        const fs::path logPath = runDir / "output.log";
        outputLog = std::fopen(logPath.c_str(), "we");
        if (!outputLog)
            throw std::runtime_error("cannot create " + logPath.string() + ": " + std::strerror(errno));
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
        // The writer keeps rows it could not write; the next flush tries again.
        if (!storeErrorReported)
            std::cerr << "parallax: run " << runId << ": writing to " << store.path() << " failed (" << e.what()
                      << "); rows are kept and written when the store accepts them\n";
        storeErrorReported = true;
    }

    std::string hostOfRank(int rank) const {
        if (router)
            return router->hostOfRank(rank);
        return rank < 0 || spec.launch.target == "local" ? host : std::string();
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
    const std::string& launcherName() const { return plan.argv.front(); }

    void advanceStop(bool byDeadline) {
        const Clock::time_point now = Clock::now();
        switch (phase) {
        case StopPhase::None:
            phase = StopPhase::Graceful;
            deadline = now + opt.stop_grace;
            launcher.signal(SIGUSR1);
            notice("warn", "stop requested (" + signalName(stopSignal) + "): SIGUSR1 to " + launcherName() +
                               " asks the ranks to checkpoint and stop; SIGTERM in " + seconds(opt.stop_grace));
            break;
        case StopPhase::Graceful:
            phase = StopPhase::Terminate;
            deadline = now + opt.term_grace;
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
                if (launcher.pid() > 0)
                    advanceStop(false);
            }
        }
        return any;
    }

    // ------------------------------------------------------------------ the loop
    void supervise() {
        Clock::time_point lastOutputFlush = Clock::now();
        Clock::time_point lastProgress = Clock::now() - opt.progress_interval;
        const double startedAt = wallNow();
        auto reportProgress = [&](bool force) {
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
        };

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
            try {
                writer->maybeFlush();
            } catch (const std::exception& e) {
                reportStoreError(e);
            }
            reportProgress(false);
            if (Clock::now() - lastOutputFlush >= kOutputFlushEvery) {
                std::fflush(outputLog);
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
        std::fflush(outputLog);
    }

    // ------------------------------------------------------------------ the end
    struct Outcome {
        std::string state;
        std::optional<int> exitCode;
        std::string reason;
    };

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
        if (const std::optional<LauncherFailure>& f = router->failure())
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

    RunRecord finish(const Outcome& o) {
        notice(o.state == RunState::Failed ? "error" : "info",
               "run " + o.state + (o.reason.empty() ? std::string() : ": " + o.reason) +
                   (o.exitCode ? " (launcher exit code " + std::to_string(*o.exitCode) + ")" : std::string()));
        if (outputLog) {
            std::fclose(outputLog);
            outputLog = nullptr;
        }
        // The store may be busy with other writers past its timeout; the rows must not be lost.
        for (int attempt = 0;; ++attempt) {
            try {
                writer->flush();
                store.finishRun(runId, o.state, o.exitCode, o.reason);
                break;
            } catch (const StoreError&) {
                if (attempt >= 4)
                    throw;
                std::this_thread::sleep_for(std::chrono::seconds(1));
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

void Supervisor::requestStop() {
    const unsigned char byte = SIGTERM;
    [[maybe_unused]] const ssize_t n = ::write(m_state->stopPipe[1], &byte, 1);
}

RunRecord Supervisor::run() {
    State& s = *m_state;
    s.prepare();
    s.create();

    std::optional<StopSignalHandler> signals;
    if (s.opt.handle_signals)
        signals.emplace(s.stopPipe[1]);

    try {
        s.setUpFolder();
        for (const SpecIssue& w : s.warnings)
            s.notice("warn", "spec: " + w.field + ": " + w.message);
        if (s.parentRun)
            s.notice("info", "resuming run " + std::to_string(*s.parentRun) + " from " + s.resumeDir);

        LaunchContext context = s.opt.launch;
        context.spec_path = (s.runDir / "spec.toml").string();
        context.run_dir = s.runDir.string();
        context.resume_dir = s.resumeDir;
        s.plan = makeLaunchPlan(s.spec, context);
        s.router = std::make_unique<OutputRouter>(*s.writer, s.plan.format, s.host, s.spec.launch.target == "local");
        s.router->setRawLog(s.outputLog);
        s.router->setErrorHandler([&s](const std::exception& e) { s.reportStoreError(e); });
        s.store.setLaunchCommand(s.runId, s.plan.commandLine());
        if (s.opt.on_created) {
            if (const std::optional<RunRecord> record = s.store.run(s.runId))
                s.opt.on_created(*record);
        }

        if (s.readStopRequests())
            return s.finish({RunState::Stopped, std::nullopt,
                             "stopped on request (" + signalName(s.stopSignal) + ") before the launch"});

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
        s.supervise();
        if (s.killedLeftovers > 0)
            s.notice("warn", "killed " + std::to_string(s.killedLeftovers) +
                                 " process(es) of the launch that outlived the launcher");
        return s.finish(s.decide());
    } catch (const StoreError&) {
        throw;
    } catch (const std::exception& e) {
        // The run exists: it must not stay "running" with nobody watching it.
        s.launcher.killAll();
        return s.finish({RunState::Failed, std::nullopt, std::string("supervisor error: ") + e.what()});
    }
}

} // namespace parallax
