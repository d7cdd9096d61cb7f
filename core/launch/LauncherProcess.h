#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace parallax {

// The launcher (mpirun, srun) as a child process: started from an argument vector in a session of
// its own, stdin from /dev/null, stdout and stderr as two non-blocking pipes.
//
// A session rather than only a process group, because OpenMPI puts each rank in a process group of
// its own: killing the launcher's group would leave the ranks running. Every process of the session
// is found through /proc. The calling process also becomes a child subreaper, so that ranks orphaned
// by a dying launcher are reparented here and reaped, rather than left as zombies.
//
// The launcher gets SIGTERM when the thread that started it ends (PR_SET_PDEATHSIG), killed or not:
// mpirun and srun end their ranks on it, so that a supervisor killed with SIGKILL leaves no launch
// behind, even one whose ranks print nothing (a write to the closed pipes would end those anyway).
// Start it from the thread that supervises it.
class LauncherProcess {
public:
    LauncherProcess() = default;
    ~LauncherProcess(); // kills and reaps whatever is left
    LauncherProcess(const LauncherProcess&) = delete;
    LauncherProcess& operator=(const LauncherProcess&) = delete;

    // argv[0] is looked up in PATH (as posix_spawnp and execvp do). `env` is set on top of this
    // process's environment. Returns 0 or the errno of the failure (ENOENT: no such launcher).
    int start(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env);

    pid_t pid() const { return m_pid; }
    int stdoutFd() const { return m_out; }
    int stderrFd() const { return m_err; }
    void closeStdout();
    void closeStderr();

    // Sends `signal` to the launcher process only (it forwards to the ranks).
    bool signal(int signal);
    // SIGKILL to every process of the launch's session, then reaps those that are children here.
    // Returns the number of processes it signalled.
    int killAll();

    // Reaps the launcher when it has exited; the raw wait status. Stays set once known.
    std::optional<int> tryWait();
    std::optional<int> status() const { return m_status; }

private:
    pid_t m_pid = -1;
    int m_out = -1;
    int m_err = -1;
    std::optional<int> m_status;
};

} // namespace parallax
