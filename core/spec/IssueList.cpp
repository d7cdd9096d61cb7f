#include "core/spec/IssueList.h"

#include "core/spec/SpecLimits.h"
#include "core/spec/Suggestions.h"
#include "core/spec/TomlText.h"

#include <utility>

namespace parallax {

void IssueList::error(const std::string& field, const std::string& message, std::vector<std::string> related) {
    list.push_back({field, message, false, std::move(related)});
}

void IssueList::warn(const std::string& field, const std::string& message, std::vector<std::string> related) {
    list.push_back({field, message, true, std::move(related)});
}

void IssueList::add(std::vector<SpecIssue> more) {
    for (SpecIssue& issue : more) list.push_back(std::move(issue));
}

bool IssueList::checkChoice(const std::string& field, const ChoiceField& choice) {
    if (choice.known()) return true;
    error(field, field + " = " + tomlString(choice.name()) + " is unknown; use one of " + joinList(choice.names()) +
                     didYouMean(choice.name(), choice.names()));
    return false;
}

bool IssueList::checkCount(const std::string& field, int64_t value, int64_t minimum) {
    const std::string problem = countProblem(field, value, minimum);
    if (problem.empty()) return true;
    error(field, problem);
    return false;
}

bool layoutUsable(const RunSpec& spec) {
    const ParallelSpec& p = spec.parallel;
    for (const auto& [field, value] : {std::pair{"parallel.dp", p.dp}, {"parallel.tp", p.tp}, {"parallel.pp", p.pp}})
        if (!countProblem(field, value, 1).empty()) return false;
    return spec.worldSize() <= kMaxProcesses;
}

} // namespace parallax
