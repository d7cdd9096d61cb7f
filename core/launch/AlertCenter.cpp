#include "core/launch/AlertCenter.h"

namespace parallax {

namespace {

double wallNow() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

} // namespace

AlertCenter::AlertCenter(const HangDetector& hangs, NoticeSink& notices, std::function<void(const RunAlert&)> raise,
                         HangPolicy policy)
    : m_hangs(hangs), m_notices(notices), m_raise(std::move(raise)), m_policy(std::move(policy)) {}

bool AlertCenter::check(Clock::time_point now) {
    if (m_rankStepsArrived) {
        m_rankStepsArrived = false;
        checkStraggler(now);
    }
    if (now - m_lastHangCheck < std::chrono::seconds(1))
        return false;
    m_lastHangCheck = now;
    return checkHang(now);
}

bool AlertCenter::checkHang(Clock::time_point now) {
    const std::optional<HangDetector::Finding> hang = m_hangs.hang(now);
    if (!hang) {
        if (m_hangSince) {
            m_notices.notice(LogLevel::Info, "steps again after the hang named above");
            raise(AlertKind::Hang, m_hangFinding, false);
            m_hangSince.reset();
            m_hangMessage.clear();
        }
        return false;
    }
    if (!m_hangSince)
        m_hangSince = now;
    // Said at once, and again each minute while it lasts (with its growing times).
    if (m_hangMessage.empty() || now - m_lastHangSaid >= std::chrono::seconds(60)) {
        m_notices.notice(LogLevel::Warn, "hang: " + hang->message);
        m_lastHangSaid = now;
    }
    if (hang->message != m_hangMessage)
        raise(AlertKind::Hang, *hang, true);
    m_hangMessage = hang->message;
    m_hangFinding = *hang;
    if (!m_policy.fail || now - *m_hangSince < m_policy.fail_after || !m_failReason.empty())
        return false;
    m_failReason = "hang: " + hang->message + "; the run was ended after " +
                   std::to_string(m_policy.fail_after.count()) + " s (telemetry.on_hang = \"fail\"); each rank's flight "
                   "recorder is in " + m_policy.flight_recorders + " (a stopped rank cannot write its own)";
    m_notices.notice(LogLevel::Error, m_failReason);
    HangDetector::Finding failed = *hang;
    failed.message = m_failReason;
    raise(AlertKind::Hang, failed, true);
    return true;
}

void AlertCenter::checkStraggler(Clock::time_point now) {
    const std::optional<HangDetector::Finding> straggler = m_hangs.straggler();
    if (straggler &&
        (straggler->ranks != m_stragglerSaidRanks || now - m_stragglerSaidAt >= std::chrono::minutes(1))) {
        m_notices.notice(LogLevel::Warn, "straggler: " + straggler->message);
        m_stragglerSaidRanks = straggler->ranks;
        m_stragglerSaidAt = now;
    }
    if (straggler && straggler->message != m_stragglerMessage)
        raise(AlertKind::Straggler, *straggler, true);
    else if (!straggler && !m_stragglerMessage.empty())
        raise(AlertKind::Straggler, m_stragglerFinding, false);
    m_stragglerMessage = straggler ? straggler->message : std::string();
    if (straggler)
        m_stragglerFinding = *straggler;
}

void AlertCenter::raise(AlertKind kind, const HangDetector::Finding& finding, bool active) {
    RunAlert a;
    a.kind = kind;
    a.message = finding.message;
    a.ranks = finding.ranks;
    a.step = finding.step;
    a.active = active;
    a.t = wallNow();
    m_raise(a);
}

} // namespace parallax
