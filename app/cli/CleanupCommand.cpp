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
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(waitSeconds);
    for (;;) {
        std::vector<std::string> said;
        size_t left = 0;
        {
            RunStore store(storePath);
            said = retryPendingCleanups(store);
            left = store.pendingCleanups().size();
        }
        for (const std::string& line : said) std::cout << line << std::endl;
        if (left == 0) {
            if (said.empty()) std::cout << "no cleanup is due in " << storePath << std::endl;
            return ExitCode::Ok;
        }
        if (std::chrono::steady_clock::now() >= until) {
            std::cout << left << " host(s) still to be cleaned; run parallax-cli cleanup again once they answer"
                      << std::endl;
            return ExitCode::Error;
        }
        std::this_thread::sleep_for(std::chrono::seconds(5));
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
    // An hour covers a host being rebooted.
    startSelfInBackground({"--store", storePath, "cleanup", "--wait", "3600"});
}

void startBackgroundAttach(const std::string& storePath, int64_t run) {
    startSelfInBackground({"--store", storePath, "attach", std::to_string(run), "--detach"});
}

} // namespace parallax
