#include "core/launch/HostWatch.h"

#include "core/launch/Ssh.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

namespace parallax {

namespace {

double wallNow() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Reads what is there (the probe's complaints are short).
void drainInto(int fd, std::string& into) {
    if (fd < 0) return;
    char buf[1024];
    for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n > 0 && into.size() < 4096) into.append(buf, static_cast<size_t>(n));
        else if (!(n < 0 && errno == EINTR)) return;
    }
}

std::string lastLine(const std::string& text) {
    std::string last, line;
    for (char c : text) {
        if (c == '\n') {
            if (!line.empty()) last = line;
            line.clear();
        } else if (c != '\r') {
            line.push_back(c);
        }
    }
    return line.empty() ? last : line;
}

} // namespace

HostWatch::HostWatch(const ClusterProfile& cluster, std::string controlFolder, std::string runDir,
                     std::chrono::milliseconds every, std::chrono::milliseconds probeTimeout,
                     std::chrono::milliseconds firstSign)
    : m_ssh(cluster.ssh), m_folder(std::move(controlFolder)), m_runDir(std::move(runDir)), m_every(every),
      m_probeTimeout(probeTimeout),
      m_firstSign(firstSign), m_start(Clock::now()) {
    ::mkdir(m_folder.c_str(), 0700);
    for (const std::string& entry : cluster.hosts) {
        Host h;
        const std::optional<HostSlots> slots = parseHostSlots(entry);
        h.name = slots ? slots->name : entry;
        h.last_answer = h.last_sign = m_start;
        m_byName.emplace(h.name, m_hosts.size());
        m_hosts.push_back(std::move(h));
    }
    for (size_t i = 0; i < m_hosts.size(); ++i) startMaster(m_hosts[i]);
    // The probes spread over the period from when the masters are up (starting them takes a few ms
    // each): n hosts start n ssh processes a period, not n in one turn.
    const Clock::time_point first = Clock::now();
    for (size_t i = 0; i < m_hosts.size(); ++i)
        m_hosts[i].next_probe = first + m_every * static_cast<int64_t>(i) / static_cast<int64_t>(m_hosts.size());
}

HostWatch::~HostWatch() {
    for (size_t i = 0; i < m_hosts.size(); ++i) {
        m_hosts[i].probe.reset();  // killed and reaped
        m_hosts[i].master.reset();
        ::unlink(controlPath(i).c_str());
    }
    ::rmdir(m_folder.c_str());
}

std::string HostWatch::controlPath(size_t index) const { return m_folder + "/" + std::to_string(index); }

void HostWatch::startMaster(Host& h) {
    const size_t index = static_cast<size_t>(&h - m_hosts.data());
    ::unlink(controlPath(index).c_str());
    SshOptions o;
    o.control_path = controlPath(index);
    o.master = true;
    o.alive_interval_s = 2;
    // A newline every 5 s ends the command there once the connection is closed (a write to a
    // closed channel), and its arguments name the run for a cleanup after a lost link.
    std::vector<std::string> remote;
    if (!m_runDir.empty()) remote = {"sh", "-c", "while sleep 5; do echo; done", "parallax-watch", m_runDir};
    h.master = std::make_unique<LauncherProcess>();
    if (h.master->start(sshCommand(h.name, m_ssh, remote, o), {}) != 0) h.master.reset();
}

void HostWatch::addAlias(const std::string& name, const std::string& watched) {
    const auto it = m_byName.find(watched);
    if (it != m_byName.end() && !name.empty()) m_byName.emplace(name, it->second);
}

void HostWatch::sawRankOn(const std::string& name) {
    auto it = m_byName.find(name);
    if (it == m_byName.end()) {
        // ssh may know a host by a longer or shorter name than the host calls itself.
        for (size_t i = 0; i < m_hosts.size() && it == m_byName.end(); ++i) {
            const std::string& h = m_hosts[i].name;
            if (name.rfind(h + ".", 0) == 0 || h.rfind(name + ".", 0) == 0) it = m_byName.emplace(name, i).first;
        }
        if (it == m_byName.end()) return;
    }
    Host& h = m_hosts[it->second];
    h.last_sign = Clock::now();
    h.signed_once = true;
}

namespace {
constexpr std::chrono::milliseconds kLongestProbe{30000};
}

std::chrono::milliseconds HostWatch::probeLimit(const Host& host) const {
    return std::max(m_probeTimeout, host.probe_limit);
}

std::vector<std::string> HostWatch::probeCommand(const Host& h) const {
    SshOptions o;
    o.connect_timeout_s = static_cast<int>(std::max<int64_t>(1, probeLimit(h).count() / 1000));
    o.control_path = controlPath(static_cast<size_t>(&h - m_hosts.data()));
    return sshCommand(h.name, m_ssh, {"true"}, o);
}

void HostWatch::poll() {
    const Clock::time_point now = Clock::now();
    if (now < m_nextLook) return;
    m_nextLook = now + kPollEvery;
    ++m_looks;
    for (Host& h : m_hosts) {
        if (h.master) {
            std::string ignored; // the master's newlines
            drainInto(h.master->stdoutFd(), ignored);
            drainInto(h.master->stderrFd(), ignored);
            if (h.master->tryWait()) h.master.reset(); // its link died: a new one with the next probe
        }
        if (h.probe) {
            drainInto(h.probe->stderrFd(), h.probe_err);
            drainInto(h.probe->stdoutFd(), h.probe_err);
            if (const std::optional<int> status = h.probe->tryWait()) {
                if (WIFEXITED(*status) && WEXITSTATUS(*status) == 0) {
                    h.last_answer = h.last_sign = now;
                    h.answered_once = h.signed_once = true;
                    h.latency_ms = std::chrono::duration<double, std::milli>(now - h.probe_started).count();
                    h.slowest_ms = std::max(h.slowest_ms, h.latency_ms);
                    h.probe_limit = std::max(h.probe_limit, std::min(kLongestProbe, std::chrono::milliseconds(
                                                                         static_cast<int64_t>(3 * h.slowest_ms))));
                    h.last_error.clear();
                } else {
                    drainInto(h.probe->stderrFd(), h.probe_err);
                    h.last_error = lastLine(h.probe_err);
                }
                h.probe.reset();
            } else if (now - h.probe_started > probeLimit(h)) {
                h.last_error = "no answer to a probe within " + std::to_string(probeLimit(h).count() / 1000) + " s";
                h.probe_limit = std::min(kLongestProbe, 2 * probeLimit(h));
                h.probe.reset(); // killed with what it started
            }
        }
        if (!h.probe && now >= h.next_probe) {
            if (!h.master) startMaster(h);
            h.probe = std::make_unique<LauncherProcess>();
            h.probe_err.clear();
            h.probe_started = now;
            // The host keeps its place in the period: probes that came due in one late turn do not
            // stay bunched in the turns after it.
            h.next_probe += m_every;
            if (h.next_probe <= now) h.next_probe += m_every * ((now - h.next_probe) / m_every + 1);
            if (h.probe->start(probeCommand(h), {}) != 0) {
                h.last_error = "cannot start ssh";
                h.probe.reset();
            }
        }
    }
}

std::chrono::milliseconds HostWatch::silentFor(const Host& host) const {
    const Clock::time_point now = Clock::now();
    // Before its first sign the host is still logging in and starting its ranks.
    const Clock::time_point from = host.signed_once ? host.last_sign : m_start + m_firstSign;
    if (now <= from) return std::chrono::milliseconds(0);
    // A probe in flight for less than the period is not silence yet.
    const auto since = std::chrono::duration_cast<std::chrono::milliseconds>(now - from);
    return since > m_every + std::chrono::milliseconds(500) ? since : std::chrono::milliseconds(0);
}

std::vector<HostWatch::Look> HostWatch::look() const {
    std::vector<Look> looks;
    for (const Host& h : m_hosts) looks.push_back({h.name, silentFor(h), h.last_error, h.slowest_ms, status(h)});
    return looks;
}

HostStatus HostWatch::status(const Host& host) const {
    HostStatus s;
    s.host = host.name;
    const double silent = std::chrono::duration<double>(silentFor(host)).count();
    if (host.signed_once) s.last_answer = wallNow() - std::chrono::duration<double>(Clock::now() - host.last_sign).count();
    s.latency_ms = host.latency_ms;
    if (silent > 0)
        s.detail = "silent for " + std::to_string(static_cast<int>(silent)) + " s" +
                   (host.last_error.empty() ? std::string() : " (" + host.last_error + ")");
    s.t = wallNow();
    return s;
}

} // namespace parallax
