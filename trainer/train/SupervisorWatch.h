#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace parallax {

// A rank's watch over its supervisor: a side thread that reads <run dir>/supervisor.alive (written
// by core/launch/SupervisorHeartbeat) about once a second. Once the file has been seen, the rank
// ends when the file stops changing for `timeout` (the supervisor was killed or hangs, and the
// launcher did not end the ranks) or is removed (the supervisor finished). Time is measured on this
// process's steady clock from the moment a change is seen, never from the file's mtime, so clocks
// that differ between the hosts sharing the run folder do not matter. A file that never appears (a
// worker started by hand, by a supervisor without a heartbeat) leaves the rank alone.
//
// The default ending prints why on stderr and leaves with _exit(kExitCode): from a side thread, no
// MPI call is allowed (MPI_THREAD_FUNNELED), and a rank blocked in a collective must not wait for
// peers; every rank watches the same file and ends by itself.
class SupervisorWatch {
public:
    static constexpr int kExitCode = 3;
    using LostHandler = std::function<void(const std::string& message)>;

    // `onLost` runs once, on the watch's thread; empty: the default ending. `pollEvery` zero:
    // a second, or a quarter of `timeout` when that is shorter.
    SupervisorWatch(const std::string& runDir, int rank, std::chrono::milliseconds timeout, LostHandler onLost = {},
                    std::chrono::milliseconds pollEvery = std::chrono::milliseconds(0));
    ~SupervisorWatch();
    SupervisorWatch(const SupervisorWatch&) = delete;
    SupervisorWatch& operator=(const SupervisorWatch&) = delete;

    // PARALLAX_SUPERVISOR_TIMEOUT_S (seconds, e.g. "30" or "2.5"); 30 s when unset. A value that is
    // not a positive number is reported on stderr and the default is used.
    static std::chrono::milliseconds timeoutFromEnvironment();

private:
    void run();

    std::string m_path;
    std::string m_who; // "parallax-worker rank R on HOST"
    std::chrono::milliseconds m_timeout;
    std::chrono::milliseconds m_pollEvery;
    LostHandler m_onLost;
    std::mutex m_mutex;
    std::condition_variable m_wake;
    bool m_stop = false;
    std::thread m_thread;
};

} // namespace parallax
