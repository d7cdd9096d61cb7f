// formatIssues and issueLines (SpecValidator.h): the validator's issues as the CLI, the
// supervisor and the worker print them.
#include "core/spec/SpecValidator.h"

namespace parallax {

std::vector<std::string> issueLines(const std::vector<SpecIssue>& issues, bool warnings) {
    std::vector<std::string> lines;
    size_t count = 0;
    for (const SpecIssue& issue : issues) {
        if (issue.warning != warnings || ++count > kMostIssuesPrinted) continue;
        lines.push_back(issue.message.find(issue.field) == std::string::npos ? issue.field + ": " + issue.message
                                                                            : issue.message);
    }
    if (count > kMostIssuesPrinted)
        lines.push_back("... and " + std::to_string(count - kMostIssuesPrinted) + " more " +
                        (warnings ? "warnings" : "errors") + " (" + std::to_string(count) + " in all; the first " +
                        std::to_string(kMostIssuesPrinted) + " are listed)");
    return lines;
}

std::string formatIssues(const std::vector<SpecIssue>& issues) {
    std::string out;
    for (const bool warnings : {false, true})
        for (const std::string& line : issueLines(issues, warnings))
            out += (warnings ? "warning: " : "") + line + "\n";
    return out;
}

} // namespace parallax
