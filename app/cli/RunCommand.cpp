#include "app/cli/CliError.h"
#include "app/cli/Commands.h"
#include "app/cli/Format.h"
#include "app/cli/ProgressPrinter.h"
#include "app/cli/WorkerLocator.h"
#include "core/launch/CheckedSpec.h"
#include "core/launch/Preflight.h"
#include "core/launch/SpecRejected.h"
#include "core/launch/Supervisor.h"
#include "core/spec/SpecIO.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>

namespace parallax {

namespace fs = std::filesystem;

namespace {

// parallel.stage_split = "profile" without stage_layers: the probe that measures the units.
constexpr int64_t kBalanceSteps = 3;
constexpr double kBalanceTimeoutSeconds = 900;

void writeAll(int fd, const std::string& text) {
    size_t done = 0;
    while (done < text.size()) {
        const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return;
        done += static_cast<size_t>(n);
    }
}

// The detached supervisor tells the waiting parent how it went: "run <id>" or "error <code> <message>".
void notifyError(int fd, int code, const std::string& message) {
    if (fd < 0)
        return;
    writeAll(fd, "error " + std::to_string(code) + " " + message + "\n");
    ::close(fd);
}

// Re-executes this program in a session of its own with the same command plus --notify-fd, and
// returns when the child has created the run (or failed to).
int detach(const std::string& storePath, const RunCommandOptions& o) {
    if (o.run.empty()) {
        // Errors a person can fix are reported here, synchronously, not in a log file.
        checkSpecFile(o.spec);
    } else {
        RunStore store(storePath);
        requireRun(store, o.run);
    }
    if (!o.attach)
        locateWorker();

    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        throw CliError(std::string("cannot create a pipe: ") + std::strerror(errno));
    std::vector<std::string> args = {selfExecutable(), "--store", fs::absolute(storePath).string()};
    if (o.run.empty())
        args.insert(args.end(), {"run", fs::absolute(o.spec).string()});
    else
        args.insert(args.end(), {o.attach ? "attach" : "resume", o.run});
    args.insert(args.end(), {"--grace", std::to_string(o.grace_s), "--notify-fd", std::to_string(fds[1])});
    for (const std::string& t : o.tags)
        args.insert(args.end(), {"--tag", t});
    if (!o.resume_spec.empty())
        args.insert(args.end(), {"--spec", fs::absolute(o.resume_spec).string()});
    for (const std::string& set : o.sets)
        args.insert(args.end(), {"--set", set});
    std::vector<char*> argv;
    for (std::string& a : args)
        argv.push_back(a.data());
    argv.push_back(nullptr);

    const pid_t pid = fork();
    if (pid < 0)
        throw CliError(std::string("cannot fork: ") + std::strerror(errno));
    if (pid == 0) {
        detachIntoOwnSession();
        fcntl(fds[1], F_SETFD, 0); // the notify pipe survives exec
        execv(argv[0], argv.data());
        const std::string msg = "error 4 cannot start " + args[0] + ": " + std::strerror(errno) + "\n";
        [[maybe_unused]] const ssize_t n = ::write(fds[1], msg.data(), msg.size());
        _exit(127);
    }
    ::close(fds[1]);
    std::string reply;
    char buf[512];
    for (;;) {
        const ssize_t n = ::read(fds[0], buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        reply.append(buf, static_cast<size_t>(n));
    }
    ::close(fds[0]);
    while (!reply.empty() && reply.back() == '\n')
        reply.pop_back();
    if (reply.rfind("run ", 0) == 0) {
        std::cout << reply.substr(4) << std::endl;
        std::cerr << "parallax: run " << reply.substr(4) << " is supervised in the background; follow it with "
                  << "parallax-cli logs " << reply.substr(4) << " --follow" << std::endl;
        return ExitCode::Ok;
    }
    if (reply.rfind("error ", 0) == 0) {
        const size_t space = reply.find(' ', 6);
        const int code = std::atoi(reply.substr(6, space - 6).c_str());
        throw CliError(space == std::string::npos ? reply : reply.substr(space + 1), code);
    }
    int status = 0;
    waitpid(pid, &status, WNOHANG);
    throw CliError("the background supervisor ended before it created the run");
}

// The supervisor's options for a new run of a checked spec, or for attaching to or resuming RUN.
SupervisorOptions supervisorOptions(const std::string& storePath, const RunStore& store, const RunCommandOptions& o,
                                    std::optional<CheckedSpec> checked) {
    SupervisorOptions options;
    if (checked) {
        RunSpec spec = checked->spec;
        if (spec.parallel.stage_split == StageSplit::Profile && spec.parallel.stage_layers.empty() &&
            spec.parallel.pp > 1) {
            // The split comes from a probe of this spec on its target; the run records it in its
            // spec (stage_layers) and the units' times the probe measured.
            const MeasuredBalance m = measureBalance(storePath, spec, kBalanceSteps, kBalanceTimeoutSeconds);
            printBalance(std::cerr, m.balance);
            spec.parallel.stage_layers = m.balance.layers;
            checked = checkSpec(spec);
            for (const UnitTimeEvent& e : m.unit_times) options.recorded_before.push_back(e);
        }
        options.spec = std::move(checked);
    } else if (o.attach) {
        options.attach_run = requireRun(store, o.run).id;
    } else {
        options.resume_run = requireRun(store, o.run).id;
        options.resume_spec_path = o.resume_spec;
        options.resume_sets = o.sets;
    }
    if (!o.attach)
        options.launch.worker = locateWorker();
    options.tags = o.tags;
    options.stop_grace = std::chrono::milliseconds(static_cast<int64_t>(o.grace_s * 1000.0));
    return options;
}

// Progress and notices go to `progress`; a detached supervisor (notifyFd set) tells its parent the
// run's id once the run exists, and from then on writes into the run's folder.
void reportTo(SupervisorOptions& options, ProgressPrinter& progress, const std::string& storePath, int& notifyFd) {
    options.on_progress = [&](const SupervisorProgress& p) { progress.update(p); };
    options.on_notice = [&](LogLevel::Value level, const std::string& message) {
        progress.notice(level, message);
    };
    options.on_rank_warning = options.on_notice;
    options.on_pending_cleanup = [storePath] { startBackgroundCleanup(storePath); };
    options.on_created = [&notifyFd](const RunRecord& r) {
        if (notifyFd >= 0) {
            // Detached: from here on this process's output goes to the run's folder.
            const std::string logPath = r.run_dir + "/supervisor.log";
            const int fd = ::open(logPath.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
            if (fd >= 0) {
                dup2(fd, STDOUT_FILENO);
                dup2(fd, STDERR_FILENO);
                ::close(fd);
            }
            writeAll(notifyFd, "run " + std::to_string(r.id) + "\n");
            ::close(notifyFd);
            notifyFd = -1;
        }
        std::cout << "run " << r.id << " (" << r.name << ") in " << r.run_dir << std::endl;
    };
}

// Supervises the run to its end, and each run that continues it after a lost host in turn; the
// last one's record.
RunRecord superviseToTheEnd(RunStore& store, SupervisorOptions& options, const RunCommandOptions& o,
                            ProgressPrinter& progress) {
    RunRecord r;
    for (;;) {
        Supervisor supervisor(store, options);
        if (o.stop_first)
            supervisor.requestStop();
        r = supervisor.run();
        progress.finish();
        // launch.on_host_failure = "resume": the run goes on as a new run, resumed from its checkpoint
        // on the hosts that answer, and this process supervises that one in turn.
        const std::optional<ContinuationPlan> next = supervisor.continuation();
        if (!next)
            break;
        std::cout << "run " << r.id << " failed: " << r.exit_reason << std::endl;
        options.spec.reset();
        options.attach_run.reset();
        options.resume_run = next->from_run;
        options.resume_spec_path.clear();
        options.resume_sets = next->sets;
        options.restarts_done += 1;
        options.on_created = [](const RunRecord& c) {
            std::cout << "run " << c.id << " (" << c.name << ") continues it in " << c.run_dir << std::endl;
        };
    }
    return r;
}

int printOutcome(const RunRecord& r) {
    const double took = r.ended_at > 0 && r.started_at > 0 ? r.ended_at - r.started_at : -1;
    std::cout << "run " << r.id << " " << r.state;
    if (r.state == RunState::Succeeded)
        std::cout << " after " << formatDuration(took);
    else if (!r.exit_reason.empty())
        std::cout << ": " << r.exit_reason;
    std::cout << std::endl;
    if (r.state == RunState::Failed)
        std::cerr << "parallax: see parallax-cli logs " << r.id << " --level warn" << std::endl;
    return exitCodeForState(r.state);
}

int superviseRun(const std::string& storePath, const RunCommandOptions& o, int& notifyFd) {
    // A spec that is refused leaves nothing behind, not even an empty store. It is read and
    // validated once, here, and handed to the supervisor as it is.
    std::optional<CheckedSpec> checked;
    if (o.run.empty())
        checked = checkSpecFile(o.spec);
    RunStore store(storePath);
    SupervisorOptions options = supervisorOptions(storePath, store, o, std::move(checked));
    const bool terminal = notifyFd < 0 && isatty(STDOUT_FILENO);
    ProgressPrinter progress(terminal);
    reportTo(options, progress, storePath, notifyFd);
    return printOutcome(superviseToTheEnd(store, options, o, progress));
}

int supervise(const std::string& storePath, const RunCommandOptions& o) {
    int notifyFd = o.notify_fd;
    try {
        return superviseRun(storePath, o, notifyFd);
    } catch (const SpecRejected& e) {
        notifyError(notifyFd, ExitCode::Usage, "the spec has errors:\n" + std::string(e.what()));
        throw;
    } catch (const PreflightFailed& e) {
        notifyError(notifyFd, ExitCode::Error,
                    "the hosts or Slurm are not ready; nothing was started:\n" + std::string(e.what()));
        throw;
    } catch (const SpecError& e) {
        notifyError(notifyFd, ExitCode::Usage, e.what());
        throw;
    } catch (const std::invalid_argument& e) {
        notifyError(notifyFd, ExitCode::Usage, e.what());
        throw;
    } catch (const CliError& e) {
        notifyError(notifyFd, e.code(), e.what());
        throw;
    } catch (const std::exception& e) {
        notifyError(notifyFd, ExitCode::Error, e.what());
        throw;
    }
}

} // namespace

int runCommand(const std::string& storePath, const RunCommandOptions& o) {
    if (o.detach)
        return detach(storePath, o);
    return supervise(storePath, o);
}

} // namespace parallax
