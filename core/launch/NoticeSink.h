#pragma once

#include "core/store/LogLevel.h"

#include <string>

namespace parallax {

// Where the supervisor's parts say what they see and do: the run's log (stream "supervisor") and
// the terminal of whoever started the run.
class NoticeSink {
public:
    virtual ~NoticeSink() = default;
    virtual void notice(LogLevel::Value level, const std::string& message) = 0;
};

} // namespace parallax
