#pragma once

#include "core/launch/HangDetector.h"
#include "core/launch/NoticeSink.h"
#include "core/store/StoreTypes.h"

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace parallax {

// Says what holds the run up, from the HangDetector's findings: each finding as a notice in the
// run's log and as an alert the console shows (active while it lasts, inactive once it ends).
//  - A hang is said at once and again each minute while it lasts (with its growing times);
//    telemetry.on_hang = "fail" ends one that lasts hang_timeout_s.
//  - A straggler is looked for as the ranks' steps arrive (it is found in steps, not seconds), and
//    said when another rank becomes the straggler and again only after a minute: one that comes
//    and goes between steps is one finding, not one line per step.
class AlertCenter {
public:
    using Clock = std::chrono::steady_clock;

    struct HangPolicy {
        bool fail = false;                   // telemetry.on_hang = "fail"
        std::chrono::seconds fail_after{0};  // telemetry.hang_timeout_s
        std::string flight_recorders;        // where the ranks write their rings: <run dir>/flight-rank<R>.json
    };

    AlertCenter(const HangDetector& hangs, NoticeSink& notices, std::function<void(const RunAlert&)> raise,
                HangPolicy policy);

    // Steps of the ranks (rank_step) arrived: the straggler is looked for on the next check().
    void rankStepsArrived() { m_rankStepsArrived = true; }
    // Looks at the findings now. Returns true once, when on_hang = "fail" ends the run: the ranks
    // are to write their flight recorders and everything to end (failReason() says why).
    bool check(Clock::time_point now);
    const std::string& failReason() const { return m_failReason; }

private:
    bool checkHang(Clock::time_point now);
    void checkStraggler(Clock::time_point now);
    void raise(AlertKind kind, const HangDetector::Finding& finding, bool active);

    const HangDetector& m_hangs;
    NoticeSink& m_notices;
    std::function<void(const RunAlert&)> m_raise;
    HangPolicy m_policy;
    bool m_rankStepsArrived = false;
    Clock::time_point m_lastHangCheck;
    Clock::time_point m_lastHangSaid;
    std::optional<Clock::time_point> m_hangSince;
    std::string m_hangMessage;
    HangDetector::Finding m_hangFinding; // the last said, for when it ends
    std::string m_stragglerMessage;
    HangDetector::Finding m_stragglerFinding;
    std::vector<int> m_stragglerSaidRanks;
    Clock::time_point m_stragglerSaidAt;
    std::string m_failReason;
};

} // namespace parallax
