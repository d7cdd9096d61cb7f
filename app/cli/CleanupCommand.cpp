#include "app/cli/CliError.h"
#include "app/cli/Commands.h"
#include "app/cli/WorkerLocator.h"
#include "core/launch/HostCleanup.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <iostream>
#include <thread>

namespace parallax {

int cleanupCommand(const std::string& storePath, double waitSeconds) {
    using Clock = std::chrono::steady_clock;
    const Clock::time_point until = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                       std::chrono::duration<double>(waitSeconds));
    // One cleaner per store: it takes every pending host, however many runs left one unswept.
    CleanerLock lock(storePath);
    if (!lock.held()) {
        std::cout << "another parallax-cli cleanup of " << storePath << " is under way; it takes every host due"
                  << std::endl;
        return ExitCode::Ok;
    }
    PendingCleaner cleaner(storePath);
    bool triedAny = false;
    for (;;) {
        for (const std::string& line : cleaner.round()) {
            std::cout << line << std::endl;
            triedAny = true;
        }
        if (!cleaner.nextDue()) {
            // A run may have added a host after this round read the rows, and left it to this
            // cleaner: it is looked at once more after the lock is let go.
            lock.release();
            if (RunStore(storePath).pendingCleanups().empty()) {
                if (!triedAny) std::cout << "no cleanup is due in " << storePath << std::endl;
                return ExitCode::Ok;
            }
            if (!lock.retake()) return ExitCode::Ok; // another cleaner has taken over
            continue;
        }
        if (Clock::now() >= until) {
            std::cout << cleaner.pendingHosts() << " host(s) still to be cleaned; run parallax-cli cleanup again once "
                      << "they answer" << std::endl;
            return ExitCode::Error;
        }
        std::this_thread::sleep_until(std::min(*cleaner.nextDue(), until));
    }
}

namespace {

// parallax-cli ARGS..., orphaned in a session of its own at once (init reaps it).
void startSelfInBackground(const std::vector<std::string>& args) {
    // Everything the child needs is made before fork: after it only async-signal-safe calls.
    std::vector<std::string> words = {selfExecutable()};
    words.insert(words.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& w : words) argv.push_back(w.data());
    argv.push_back(nullptr);
    const pid_t pid = fork();
    if (pid != 0) {
        // The intermediate child exits at once; a failed fork leaves the work for the next start.
        if (pid > 0) waitpid(pid, nullptr, 0);
        return;
    }
    detachIntoOwnSession();
    if (fork() != 0) _exit(0);
    execv(argv[0], argv.data());
    _exit(127);
}

} // namespace

void startBackgroundCleanup(const std::string& storePath) {
    // A cleaner at work takes the host this run left: it reads the pending rows again before it
    // lets the lock go (cleanupCommand), and the row is written by now. Only a free lock needs one.
    if (CleanerLock::heldElsewhere(storePath)) return;
    // An hour covers a host being rebooted.
    startSelfInBackground({"--store", storePath, "cleanup", "--wait", "3600"});
}

void startBackgroundAttach(const std::string& storePath, int64_t run) {
    startSelfInBackground({"--store", storePath, "attach", std::to_string(run), "--detach"});
}

} // namespace parallax
