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

HostWatch::HostWatch(const ClusterProfile& cluster, std::string controlFolder, std::chrono::milliseconds every,
                     std::chrono::milliseconds probeTimeout)
    : m_ssh(cluster.ssh), m_folder(std::move(controlFolder)), m_every(every), m_probeTimeout(probeTimeout) {
    ::mkdir(m_folder.c_str(), 0700);
    const Clock::time_point now = Clock::now();
    for (const std::string& entry : cluster.hosts) {
        Host h;
        const std::optional<HostSlots> slots = parseHostSlots(entry);
        h.name = slots ? slots->name : entry;
        h.last_answer = now;
        h.next_probe = now;
        m_hosts.push_back(std::move(h));
    }
    for (size_t i = 0; i < m_hosts.size(); ++i) startMaster(m_hosts[i]);
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
    h.master = std::make_unique<LauncherProcess>();
    if (h.master->start(sshCommand(h.name, m_ssh, {}, o), {}) != 0) h.master.reset();
}

std::vector<std::string> HostWatch::probeCommand(const Host& h) const {
    SshOptions o;
    o.connect_timeout_s = static_cast<int>(std::max<int64_t>(1, m_probeTimeout.count() / 1000));
    o.control_path = controlPath(static_cast<size_t>(&h - m_hosts.data()));
    return sshCommand(h.name, m_ssh, {"true"}, o);
}

void HostWatch::poll() {
    const Clock::time_point now = Clock::now();
    for (Host& h : m_hosts) {
        if (h.master && h.master->tryWait()) h.master.reset(); // its link died: a new one with the next probe
        if (h.probe) {
            drainInto(h.probe->stderrFd(), h.probe_err);
            drainInto(h.probe->stdoutFd(), h.probe_err);
            if (const std::optional<int> status = h.probe->tryWait()) {
                if (WIFEXITED(*status) && WEXITSTATUS(*status) == 0) {
                    h.last_answer = now;
                    h.answered_once = true;
                    h.latency_ms = std::chrono::duration<double, std::milli>(now - h.probe_started).count();
                    h.last_error.clear();
                } else {
                    drainInto(h.probe->stderrFd(), h.probe_err);
                    h.last_error = lastLine(h.probe_err);
                }
                h.probe.reset();
            } else if (now - h.probe_started > m_probeTimeout) {
                h.last_error = "no answer to a probe within " + std::to_string(m_probeTimeout.count() / 1000) + " s";
                h.probe.reset(); // killed with what it started
            }
        }
        if (!h.probe && now >= h.next_probe) {
            if (!h.master) startMaster(h);
            h.probe = std::make_unique<LauncherProcess>();
            h.probe_err.clear();
            h.probe_started = now;
            h.next_probe = now + m_every;
            if (h.probe->start(probeCommand(h), {}) != 0) {
                h.last_error = "cannot start ssh";
                h.probe.reset();
            }
        }
    }
}

std::chrono::milliseconds HostWatch::silentFor(const Host& host) const {
    // A probe in flight for less than the period is not silence yet.
    const auto since = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - host.last_answer);
    return since > m_every + std::chrono::milliseconds(500) ? since : std::chrono::milliseconds(0);
}

HostStatus HostWatch::status(const Host& host, const std::string& state) const {
    HostStatus s;
    s.host = host.name;
    s.state = state;
    const double silent = std::chrono::duration<double>(silentFor(host)).count();
    if (host.answered_once) s.last_answer = wallNow() - std::chrono::duration<double>(Clock::now() - host.last_answer).count();
    s.latency_ms = host.latency_ms;
    if (silent > 0)
        s.detail = "silent for " + std::to_string(static_cast<int>(silent)) + " s" +
                   (host.last_error.empty() ? std::string() : " (" + host.last_error + ")");
    s.t = wallNow();
    return s;
}

} // namespace parallax
