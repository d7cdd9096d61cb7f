#include "core/launch/HostStates.h"

#include <cmath>
#include <sstream>

namespace parallax {

namespace {

// A host that has given no sign of life for this long is said to be silent (the run fails at
// host_timeout_s).
constexpr auto kSilentNotice = std::chrono::seconds(6);
constexpr auto kRecordEvery = std::chrono::seconds(10);

} // namespace

HostStates::HostStates(int64_t hostTimeoutS, NoticeSink& notices, Record record, RanksOn ranksOn)
    : m_timeoutS(hostTimeoutS), m_notices(notices), m_record(std::move(record)), m_ranksOn(std::move(ranksOn)) {}

std::optional<std::string> HostStates::review(const std::vector<HostWatch::Look>& hosts, Clock::time_point now,
                                              bool mayEnd) {
    const auto timeout = std::chrono::seconds(m_timeoutS);
    const bool recordAll = now - m_lastRecord >= kRecordEvery;
    std::optional<std::string> ended;
    for (const HostWatch::Look& h : hosts) {
        sayIfSshIsSlow(h);
        const HostState state = h.silent >= timeout        ? HostState::Lost
                                : h.silent >= kSilentNotice ? HostState::Silent
                                                            : HostState::Answering;
        const auto known = m_states.find(h.name);
        const std::optional<HostState> was =
            known == m_states.end() ? std::nullopt : std::optional<HostState>(known->second);
        const bool changed = was != state;
        if (changed && state == HostState::Silent)
            m_notices.notice(LogLevel::Warn, h.name + " silent for " + std::to_string(h.silent.count() / 1000) + " s (" +
                                         (h.last_error.empty() ? std::string("ssh probes unanswered") : h.last_error) +
                                         "); the run fails if it stays silent for " + std::to_string(m_timeoutS) + " s");
        if (changed && state == HostState::Answering && was)
            m_notices.notice(LogLevel::Info, h.name + " answers again");
        if (changed || recordAll) {
            HostStatus status = h.status;
            status.state = state;
            m_record(status);
        }
        m_states[h.name] = state;
        if (state == HostState::Lost && !m_lost && mayEnd) {
            m_lost = true;
            ended = h.name + " has not answered for " + std::to_string(h.silent.count() / 1000) + " s (" +
                    m_ranksOn(h.name) + " run there" + (h.last_error.empty() ? std::string() : "; " + h.last_error) +
                    "): the run was ended on every host";
            m_notices.notice(LogLevel::Error, *ended);
        }
    }
    if (recordAll)
        m_lastRecord = now;
    return ended;
}

// ssh's own cost, measured: a probe that takes a good part of host_timeout_s leaves the probes
// alone too little room (the ranks' lines from the host count all the same).
void HostStates::sayIfSshIsSlow(const HostWatch::Look& h) {
    const double timeoutMs = 1000.0 * static_cast<double>(m_timeoutS);
    if (h.slowest_ms <= 0 || 3 * h.slowest_ms < timeoutMs || !m_slowSshSaid.insert(h.name).second)
        return;
    std::ostringstream said;
    said.precision(2);
    said << "ssh to " << h.name << " takes " << h.slowest_ms / 1000.0 << " s to answer a probe: launch.host_timeout_s = "
         << m_timeoutS << " is too tight for the probes alone (set it to at least "
         << static_cast<int64_t>(std::ceil(4 * h.slowest_ms / 1000.0))
         << " s); meanwhile the ranks' output from " << h.name << " counts as its sign of life too";
    m_notices.notice(LogLevel::Warn, said.str());
}

} // namespace parallax
