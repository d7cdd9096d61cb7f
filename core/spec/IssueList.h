#pragma once

#include "core/spec/Choice.h"
#include "core/spec/RunSpec.h"
#include "core/spec/SpecValidator.h"

#include <string>
#include <vector>

namespace parallax {

// The issues one part of the validator finds, with the checks every part makes the same way.
struct IssueList {
    std::vector<SpecIssue> list;

    // `related`: the other fields the problem depends on (SpecIssue::related).
    void error(const std::string& field, const std::string& message, std::vector<std::string> related = {});
    void warn(const std::string& field, const std::string& message, std::vector<std::string> related = {});
    void add(std::vector<SpecIssue> more);
    // A closed choice held as a name; returns whether it is one of the choice's.
    bool checkChoice(const std::string& field, const ChoiceField& choice);
    // A count: at least `minimum` and within its limit (SpecLimits.h). Returns whether it is, so
    // that what depends on it is only computed from usable numbers.
    bool checkCount(const std::string& field, int64_t value, int64_t minimum);
};

// dp, tp and pp each usable and their product within the process limit: the layout can be
// multiplied out.
bool layoutUsable(const RunSpec& spec);

} // namespace parallax
