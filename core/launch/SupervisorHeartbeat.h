#pragma once

#include <chrono>
#include <string>

namespace parallax {

// The supervisor's sign of life for the ranks of its run: <run dir>/supervisor.alive (see
// SupervisorAliveFile.h), rewritten at most every `every` while beat() is called. The ranks exit
// when it stops changing (the supervisor was killed, or hangs) or is removed (it finished), so that
// no rank outlives its supervisor even when the launcher did not pass a signal on.
//
// Each write opens, writes and closes the file: the run folder may be on NFS, where another host
// sees a write once the file is closed (close-to-open consistency), and where open() there revalidates
// what it reads.
class SupervisorHeartbeat {
public:
    // Creates the file (std::runtime_error naming it when it cannot).
    explicit SupervisorHeartbeat(const std::string& runDir,
                                 std::chrono::milliseconds every = std::chrono::milliseconds(2000));
    ~SupervisorHeartbeat(); // finish()
    SupervisorHeartbeat(const SupervisorHeartbeat&) = delete;
    SupervisorHeartbeat& operator=(const SupervisorHeartbeat&) = delete;

    // Cheap when nothing is due; call it from every turn of the supervising loop. A failed write
    // is kept in failure() and tried again when the next beat is due.
    void beat();
    // Removes the file: the ranks still running exit at once. Further beats do nothing.
    void finish();

    const std::string& path() const { return m_path; }
    // The last write's error ("no space left on device"); empty when it worked.
    const std::string& failure() const { return m_failure; }
    long long beats() const { return m_beats; }

private:
    bool write();

    std::string m_path;
    std::chrono::milliseconds m_every;
    std::chrono::steady_clock::time_point m_last;
    long long m_beats = 0;
    std::string m_failure;
    bool m_finished = false;
};

} // namespace parallax
