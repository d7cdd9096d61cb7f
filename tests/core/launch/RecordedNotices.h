#pragma once

#include "core/launch/NoticeSink.h"

#include <string>
#include <vector>

namespace parallax::testing {

// The notices a part said, as "level: message".
class RecordedNotices : public NoticeSink {
public:
    std::vector<std::string> said;

    void notice(LogLevel::Value level, const std::string& message) override {
        said.push_back(std::string(LogLevel::name(level)) + ": " + message);
    }
    // How many begin with `start`.
    size_t count(const std::string& start) const {
        size_t n = 0;
        for (const std::string& s : said) n += s.rfind(start, 0) == 0;
        return n;
    }
    std::string last() const { return said.empty() ? std::string() : said.back(); }
};

} // namespace parallax::testing
