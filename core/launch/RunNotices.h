#pragma once

#include "core/launch/NoticeSink.h"
#include "core/store/StoreTypes.h"

#include <functional>
#include <string>

namespace parallax {

// The supervisor's notices: each a row of the run's log (rank -1, stream "supervisor", this
// host), handed to `write` (the StoreFlusher), and to `onNotice` for the terminal.
class RunNotices : public NoticeSink {
public:
    using Callback = std::function<void(LogLevel::Value level, const std::string& message)>;

    RunNotices(std::string host, std::function<void(const LogRow&)> write, Callback onNotice);

    void notice(LogLevel::Value level, const std::string& message) override;
    // The row a notice becomes, at time `t` (seconds since the epoch).
    static LogRow row(const std::string& host, LogLevel::Value level, const std::string& message, double t);

private:
    std::string m_host;
    std::function<void(const LogRow&)> m_write;
    Callback m_onNotice;
};

} // namespace parallax
