// formatIssues (SpecValidator.h): the validator's issues as the CLI and the worker print them.
#include "core/spec/SpecValidator.h"

namespace parallax {

std::string formatIssues(const std::vector<SpecIssue>& issues) {
    std::string out;
    for (const bool warnings : {false, true}) {
        size_t count = 0;
        for (const SpecIssue& issue : issues) {
            if (issue.warning != warnings || ++count > kMostIssuesPrinted) continue;
            if (warnings) out += "warning: ";
            if (issue.message.find(issue.field) == std::string::npos) out += issue.field + ": ";
            out += issue.message + "\n";
        }
        if (count > kMostIssuesPrinted)
            out += std::string(warnings ? "warning: " : "") + "... and " + std::to_string(count - kMostIssuesPrinted) +
                   " more " + (warnings ? "warnings" : "errors") + " (" + std::to_string(count) +
                   " in all; the first " + std::to_string(kMostIssuesPrinted) + " are listed)\n";
    }
    return out;
}

} // namespace parallax
