#include "core/launch/HostCleanup.h"

#include "core/launch/Ssh.h"
#include "core/spec/SpecIO.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <future>
#include <set>
#include <thread>

namespace parallax {

namespace {

// A host name as a file name: what is not a letter, digit, '.', '-' or '_' becomes '_'.
std::string fileNameOf(const std::string& host) {
    std::string out = host;
    for (char& c : out)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') c = '_';
    return out.empty() || out[0] == '.' ? "_" + out : out;
}

int openLock(const std::string& folder, const std::string& name) {
    ::mkdir(folder.c_str(), 0700);
    return ::open((folder + "/" + name).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
}

// Takes the lock of `fd`, waiting at most `wait`.
bool lockWithin(int fd, std::chrono::milliseconds wait) {
    const auto until = std::chrono::steady_clock::now() + wait;
    for (;;) {
        if (::flock(fd, LOCK_EX | LOCK_NB) == 0) return true;
        if (std::chrono::steady_clock::now() >= until) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
}

} // namespace

std::string cleanupLockFolder(const std::string& storePath) { return storePath + ".cleanup"; }

std::vector<HostCleanupResult> cleanUpHosts(const std::vector<HostSweepJob>& jobs, const std::string& lockFolder,
                                            std::chrono::milliseconds lockWait) {
    // Every host at once, each under its own lock, held for its own sweep only: a slow host does
    // not keep another supervisor from sweeping a quick one.
    std::vector<std::future<HostCleanupResult>> pending;
    for (const HostSweepJob& job : jobs)
        pending.push_back(std::async(std::launch::async, [&job, &lockFolder, lockWait] {
            HostCleanupResult h;
            h.host = job.host;
            const int lock = openLock(lockFolder, "sweep-" + fileNameOf(job.host) + ".lock");
            if (lock < 0 || !lockWithin(lock, lockWait)) {
                if (lock >= 0) ::close(lock);
                h.error = "another cleanup was sweeping it for longer than " +
                          std::to_string(std::chrono::duration_cast<std::chrono::seconds>(lockWait).count()) + " s";
                return h;
            }
            SshOptions o;
            o.connect_timeout_s = 10;
            const CommandResult r =
                runCommands({sshCommand(job.host, job.ssh, sweepCommand(job.run_dirs), o)}, kSweepLimitHere).front();
            ::close(lock); // and with it the lock
            const SweepOutcome swept = readSweep(r, kSweepLimitHere);
            h.reached = swept.kind == SweepOutcome::Kind::Swept;
            h.answered = swept.kind != SweepOutcome::Kind::NoAnswer;
            h.ended = swept.ended;
            h.error = swept.error;
            return h;
        }));
    std::vector<HostCleanupResult> out;
    for (auto& p : pending) out.push_back(p.get());
    return out;
}

namespace {

// The sweep of `host` for every run folder due there, with the ssh settings of its newest run.
HostSweepJob jobFor(const RunStore& store, const std::string& host, const std::vector<PendingCleanup>& rows) {
    HostSweepJob job;
    job.host = host;
    int64_t newest = 0;
    for (const PendingCleanup& c : rows) {
        job.run_dirs.push_back(c.run_dir);
        newest = std::max(newest, c.run);
    }
    if (const std::optional<RunRecord> record = store.run(newest)) {
        try {
            job.ssh = resolveHosts(parseSpec(record->spec_toml, "run " + std::to_string(newest))).ssh;
        } catch (const std::exception&) {
            // The profile is gone or changed: ssh's own settings may still reach the host.
        }
    }
    return job;
}

} // namespace

std::vector<std::string> PendingCleaner::round() {
    RunStore store(m_storePath);
    const Clock::time_point now = Clock::now();
    // Per host: its rows, and the ssh settings of its newest run.
    std::map<std::string, std::vector<PendingCleanup>> byHost;
    for (const PendingCleanup& c : store.pendingCleanups()) byHost[c.host].push_back(c);
    m_hostsLeft = byHost.size();
    for (auto it = m_backoff.begin(); it != m_backoff.end();)
        it = byHost.count(it->first) ? std::next(it) : m_backoff.erase(it);
    std::vector<HostSweepJob> jobs;
    for (const auto& [host, rows] : byHost)
        if (m_backoff[host].due <= now) jobs.push_back(jobFor(store, host, rows));
    // Every host that is due at once: one that does not answer costs its time once.
    const std::vector<HostCleanupResult> results = cleanUpHosts(jobs, cleanupLockFolder(m_storePath));
    std::vector<std::string> said;
    for (const HostCleanupResult& r : results) {
        const std::vector<PendingCleanup>& rows = byHost[r.host];
        std::string runs;
        for (const PendingCleanup& c : rows) runs += (runs.empty() ? "" : ", ") + std::to_string(c.run);
        if (r.reached) {
            for (const PendingCleanup& c : rows) store.removePendingCleanup(c.run, r.host);
            m_backoff.erase(r.host);
            --m_hostsLeft;
            said.push_back(r.host + " answers again; " + std::to_string(r.ended) + " process(es) of run(s) " + runs +
                           " ended there");
            continue;
        }
        Backoff& b = m_backoff[r.host];
        const std::string error = r.answered ? "answered with an error: " + r.error : r.error;
        for (const PendingCleanup& c : rows) store.notePendingCleanupAttempt(c.run, r.host, error);
        b.due = Clock::now() + b.delay;
        said.push_back(r.host + (r.answered ? " " : " still does not answer: ") + error + "; run(s) " + runs +
                       " stay due there, tried again in " + std::to_string(b.delay.count()) + " s");
        b.delay = std::min(kLongestDelay, b.delay * 2);
    }
    return said;
}

std::optional<PendingCleaner::Clock::time_point> PendingCleaner::nextDue() const {
    if (m_hostsLeft == 0) return std::nullopt;
    std::optional<Clock::time_point> next;
    for (const auto& [host, b] : m_backoff)
        if (!next || b.due < *next) next = b.due;
    return next ? next : std::optional<Clock::time_point>(Clock::now());
}

CleanerLock::CleanerLock(const std::string& storePath) : m_path(cleanupLockFolder(storePath)) { retake(); }

CleanerLock::~CleanerLock() { release(); }

bool CleanerLock::heldElsewhere(const std::string& storePath) {
    const int fd = openLock(cleanupLockFolder(storePath), "cleaner.lock");
    if (fd < 0) return false;
    const bool busy = ::flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    ::close(fd);
    return busy;
}

void CleanerLock::release() {
    if (m_fd >= 0) ::close(m_fd);
    m_fd = -1;
}

bool CleanerLock::retake() {
    if (m_fd >= 0) return true;
    m_fd = openLock(m_path, "cleaner.lock");
    if (m_fd >= 0 && ::flock(m_fd, LOCK_EX | LOCK_NB) != 0) release();
    return m_fd >= 0;
}

} // namespace parallax
