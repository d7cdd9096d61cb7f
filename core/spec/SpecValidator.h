#pragma once

#include "core/spec/MachineInfo.h"
#include "core/spec/RunSpec.h"

#include <cstddef>
#include <string>
#include <vector>

namespace parallax {

// One problem with a spec: the field path ("parallel.tp", "model.heads") and a message that says
// what is wrong and how to fix it ("model.heads = 6 is not divisible by parallel.tp = 4; choose tp
// among 1, 2, 3, 6").
struct SpecIssue {
    std::string field;
    std::string message;
    bool warning = false; // warnings do not block a launch
    // Other fields the problem depends on: changing any of them can cause or fix it ("model.heads =
    // 6 is not divisible by parallel.tp = 4" is model.heads's issue, related to parallel.tp). The
    // form marks the field a person just changed when it is among them.
    std::vector<std::string> related = {};
};

// The same validator runs in the console's form (live), the CLI and the worker (before any
// collective). Returns every problem found, errors and warnings, in field order, then a warning for
// each key the reader did not know (kept in spec.preserved_toml): "train.stpes: unknown key; did
// you mean train.steps? ...". It finishes quickly for every value a spec can hold: counts have
// upper bounds (SpecLimits.h) and all arithmetic over them is checked.
std::vector<SpecIssue> validateSpec(const RunSpec& spec);
// The same, and for launch.target = "local" also against the machine the run would start on
// (thisMachine() from MachineInfo.h): ranks and threads per core, and the memory estimate against
// its RAM (cpu) or the memory of one GPU (cuda, when `machine` knows it).
std::vector<SpecIssue> validateSpec(const RunSpec& spec, const MachineInfo& machine);
bool hasErrors(const std::vector<SpecIssue>& issues);
// "field: message" lines, errors first; warnings start with "warning: ". A message that already
// names its field is printed as it is. At most kMostIssuesPrinted errors and as many warnings are
// listed; a line after them says how many more there are (a spec is read whole however many
// issues it has; what is printed stays a screenful).
constexpr size_t kMostIssuesPrinted = 50;
std::string formatIssues(const std::vector<SpecIssue>& issues);
// The lines of formatIssues for the errors (warnings = false) or the warnings alone, without the
// "warning: " prefix: each "field: message" (or the message that names its field), at most
// kMostIssuesPrinted of them and a line saying how many more.
std::vector<std::string> issueLines(const std::vector<SpecIssue>& issues, bool warnings);

// Where a data kind is read from when data.path is empty ("" when it needs a path or none).
std::string defaultDataPath(const Choice<DataKind>& dataKind);

} // namespace parallax
