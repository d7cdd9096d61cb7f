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

void startBackgroundCleanup(const std::string& storePath) {
    // Everything the child needs is made before fork: after it only async-signal-safe calls.
    const std::string self = selfExecutable();
    const pid_t pid = fork();
    if (pid != 0) {
        // The intermediate child exits at once; a failed fork leaves the rows for the next start.
        if (pid > 0) waitpid(pid, nullptr, 0);
        return;
    }
    detachIntoOwnSession();
    // Orphaned at once: init reaps it. An hour covers a host being rebooted.
    if (fork() != 0) _exit(0);
    execl(self.c_str(), self.c_str(), "--store", storePath.c_str(), "cleanup", "--wait", "3600",
          static_cast<char*>(nullptr));
    _exit(127);
}

} // namespace parallax
