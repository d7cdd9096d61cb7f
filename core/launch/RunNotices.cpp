#include "core/launch/RunNotices.h"

#include <chrono>

namespace parallax {

RunNotices::RunNotices(std::string host, std::function<void(const LogRow&)> write, Callback onNotice)
    : m_host(std::move(host)), m_write(std::move(write)), m_onNotice(std::move(onNotice)) {}

LogRow RunNotices::row(const std::string& host, LogLevel::Value level, const std::string& message, double t) {
    LogRow row;
    row.t = t;
    row.rank = -1;
    row.host = host;
    row.level = level;
    row.stream = "supervisor";
    row.message = message;
    return row;
}

void RunNotices::notice(LogLevel::Value level, const std::string& message) {
    const double now =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    m_write(row(m_host, level, message, now));
    if (m_onNotice)
        m_onNotice(level, message);
}

} // namespace parallax
