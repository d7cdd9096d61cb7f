#include "core/launch/SlurmBatchFollower.h"

#include "core/launch/OutputRouter.h"
#include "core/launch/PrivateFile.h"
#include "core/launch/SignalNames.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>

namespace parallax {

namespace {

double wallNow() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

} // namespace

SlurmBatchFollower::SlurmBatchFollower(RunStore& store, int64_t runId, std::string runDir, std::string host, bool batch,
                                       NoticeSink& notices, SlurmControl& slurm, std::chrono::milliseconds poll)
    : m_store(store), m_runId(runId), m_runDir(std::move(runDir)), m_host(std::move(host)), m_batch(batch),
      m_notices(notices), m_slurm(slurm), m_poll(poll) {}

SlurmBatchFollower::~SlurmBatchFollower() {
    if (m_fd >= 0)
        ::close(m_fd);
    if (m_lock >= 0)
        ::close(m_lock);
}

bool SlurmBatchFollower::takeFollowLock() {
    const std::string path = m_runDir + "/follow.lock";
    if (m_lock < 0)
        m_lock = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (m_lock < 0)
        throw std::runtime_error("cannot open " + path + ": " + std::strerror(errno));
    return ::flock(m_lock, LOCK_EX | LOCK_NB) == 0;
}

void SlurmBatchFollower::submit(const LaunchPlan& plan) {
    takeFollowLock();
    const std::string script = m_runDir + "/job.sh";
    writePrivateFile(script, plan.script);
    ::chmod(script.c_str(), 0700);
    m_jobId = m_slurm.submit(plan.submit, plan.env);
    m_job = {};
    m_job.job.job_id = m_jobId;
    m_job.job.mode = SlurmMode::Batch;
    m_job.job.state = "PENDING";
    m_store.setSlurmJob(m_runId, m_job.job);
    m_store.setSupervisor(m_runId, static_cast<int64_t>(getpid()), m_host);
    m_notices.notice(LogLevel::Info, "supervisor " + std::to_string(getpid()) + " on " + m_host + " submitted Slurm job " +
                                 m_jobId + " (" + plan.commandLine() + "); it runs " + script +
                                 " and goes on if this supervisor ends: parallax-cli attach " +
                                 std::to_string(m_runId) + " follows it again");
}

void SlurmBatchFollower::resume(const SlurmJob& job, int64_t readFrom) {
    m_jobId = job.job_id;
    m_job = {};
    m_job.job = job;
    m_read = readFrom;
}

void SlurmBatchFollower::adopt(const std::string& jobId, Clock::time_point now) {
    if (!m_jobId.empty())
        return;
    m_jobId = jobId;
    m_runningMarked = true; // the supervisor marked the run running when srun started
    m_lastQuery = now - 5 * m_poll;
}

void SlurmBatchFollower::query(bool force, Clock::time_point now) {
    if (!force && now - m_lastQuery < (m_batch ? m_poll : 5 * m_poll))
        return;
    m_lastQuery = now;
    SlurmJobStatus st = m_slurm.query(m_jobId, m_batch ? std::chrono::seconds(10) : std::chrono::seconds(3));
    if (!st.known) {
        if (m_job.known || m_job.error != st.error)
            m_notices.notice(LogLevel::Warn, "Slurm does not say how job " + m_jobId + " is (" + st.error + ")");
        m_job.error = st.error;
        m_job.known = false;
        return;
    }
    m_lastKnown = now;
    st.job.mode = m_batch ? SlurmMode::Batch : SlurmMode::Srun;
    st.job.t = wallNow();
    record(st);
    if (!m_runningMarked && st.job.state != "PENDING") {
        try {
            m_store.markRunning(m_runId, static_cast<int64_t>(getpid()), m_host);
            m_runningMarked = true;
        } catch (const StoreError& e) {
            if (m_onStoreError)
                m_onStoreError(e);
        }
    }
    m_job = std::move(st);
}

// Kept in the store when it changed (the time left: each minute); a new state or reason is said.
void SlurmBatchFollower::record(const SlurmJobStatus& st) {
    const SlurmJob& j = st.job;
    const std::string said = j.state + "|" + j.reason + "|" + j.nodes + "|" + std::to_string(j.queue_position) + "|" +
                             std::to_string(j.time_left_s < 0 ? -1 : j.time_left_s / 60);
    if (said == m_recorded)
        return;
    if (j.state != m_job.job.state || j.reason != m_job.job.reason)
        m_notices.notice(LogLevel::Info, "Slurm job " + m_jobId + ": " + j.state +
                                     (j.reason.empty() ? std::string() : " (" + j.reason + ")") +
                                     (j.queue_position > 0 ? ", place " + std::to_string(j.queue_position) +
                                                                 " in the queue"
                                                           : std::string()) +
                                     (j.nodes.empty() ? std::string() : " on " + j.nodes));
    try {
        m_store.setSlurmJob(m_runId, j);
        m_recorded = said;
    } catch (const StoreError& e) {
        if (m_onStoreError)
            m_onStoreError(e);
    }
}

bool SlurmBatchFollower::readOutput(OutputRouter& router) {
    const std::string path = m_runDir + "/output.log";
    if (m_fd < 0) {
        m_fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (m_fd < 0)
            return false;
        if (::lseek(m_fd, static_cast<off_t>(m_read), SEEK_SET) < 0)
            throw std::runtime_error("cannot seek to byte " + std::to_string(m_read) + " of " + path + ": " +
                                     std::strerror(errno));
    }
    static thread_local std::vector<char> buffer(1 << 16);
    bool any = false;
    // Bounded, so that a long file cannot starve the rest of the loop.
    for (int i = 0; i < 64; ++i) {
        const ssize_t n = ::read(m_fd, buffer.data(), buffer.size());
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        router.append(OutputStream::Stdout, buffer.data(), static_cast<size_t>(n), wallNow());
        m_read += n;
        any = true;
    }
    return any;
}

bool SlurmBatchFollower::over(const OutputRouter& router, Clock::time_point now) const {
    if (m_job.known)
        return slurmEndState(m_job.job.state) != nullptr;
    return router.runEnd() || now - m_lastKnown > std::chrono::seconds(60);
}

void SlurmBatchFollower::readLastOutput(OutputRouter& router) {
    const Clock::time_point quietUntil = Clock::now() + std::chrono::seconds(5);
    for (Clock::time_point lastData = Clock::now(); Clock::now() < quietUntil;) {
        if (readOutput(router))
            lastData = Clock::now();
        else if (router.runEnd() || Clock::now() - lastData > std::chrono::seconds(1))
            break;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
}

void SlurmBatchFollower::signalRanks(int signal) {
    if (m_jobId.empty())
        return;
    const std::string name = signalName(signal).substr(3); // "SIGUSR1" -> "USR1"
    const std::string problem = slurmEndState(m_job.job.state) ? std::string() : m_slurm.signal(m_jobId, name);
    if (!problem.empty())
        m_notices.notice(LogLevel::Error, "cannot signal the ranks of Slurm job " + m_jobId + ": " + problem);
}

void SlurmBatchFollower::killRanks() { signalRanks(SIGKILL); }

// Slurm sends the job's steps SIGTERM, then SIGKILL after its KillWait.
void SlurmBatchFollower::killAll() {
    if (m_jobId.empty())
        return;
    const std::string problem = m_slurm.cancel(m_jobId);
    if (!problem.empty())
        m_notices.notice(LogLevel::Error, "cannot cancel Slurm job " + m_jobId + ": " + problem);
}

} // namespace parallax
