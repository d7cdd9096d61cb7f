#pragma once

// How the spec tests look for an issue and show the issues they got.

#include "core/spec/SpecValidator.h"

#include <string>
#include <vector>

namespace parallax {

// One line per issue: "  error field | message".
inline std::string describe(const std::vector<SpecIssue>& issues) {
    std::string out;
    for (const SpecIssue& i : issues) out += (i.warning ? "  warning " : "  error ") + i.field + " | " + i.message + "\n";
    return out;
}

// An issue on `field` whose message contains `part`, a warning or an error as asked.
inline bool hasIssue(const std::vector<SpecIssue>& issues, const std::string& field, const std::string& part,
                     bool warning) {
    for (const SpecIssue& i : issues)
        if (i.field == field && i.message.find(part) != std::string::npos && i.warning == warning) return true;
    return false;
}

} // namespace parallax
