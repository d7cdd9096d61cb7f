#pragma once

#include <string>

namespace parallax {

// Where the supervisor's parts say what they see and do: the run's log (stream "supervisor") and
// the terminal of whoever started the run. `level` is info, warn or error.
class NoticeSink {
public:
    virtual ~NoticeSink() = default;
    virtual void notice(const std::string& level, const std::string& message) = 0;
};

} // namespace parallax
