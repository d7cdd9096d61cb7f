#pragma once

#include "core/spec/RunSpec.h"
#include "core/spec/SpecValidator.h"

#include <stdexcept>
#include <string>
#include <vector>

namespace parallax {

// A spec that cannot be read (TOML syntax, wrong type, unknown value). what() starts with the
// source name and line where known: "quickstart.toml:12: train.steps must be an integer, got \"ten\"".
class SpecError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Parses TOML text. Unknown keys are kept (RunSpec::preserved_toml) and written back by toToml.
RunSpec parseSpec(const std::string& text, const std::string& sourceName = "spec");
// SpecError naming the path when it is missing, unreadable, a directory, or holds no settings at
// all (empty, blank or only comments): a run is never started from the defaults by mistake.
RunSpec readSpecFile(const std::string& path);
// TOML text of the spec; parseSpec(toToml(s)) == s for every field, unknown keys included.
std::string toToml(const RunSpec& spec);
void writeSpecFile(const RunSpec& spec, const std::string& path); // atomic (temp file + rename)

// As above, and also fills `unknown` with a warning for every key this version does not know
// (kept in preserved_toml all the same): "quickstart.toml:12: train.stpes: unknown key; did you
// mean train.steps? ...". The reader checks syntax and types only; values (enums, ranges,
// layouts) are the validator's job, so that a spec with a typo still opens in the form. Past the
// first 50 unknown keys, one more warning (field "spec") counts the rest.
RunSpec parseSpec(const std::string& text, const std::string& sourceName, std::vector<SpecIssue>& unknown);
RunSpec readSpecFile(const std::string& path, std::vector<SpecIssue>& unknown);
// The warnings above for a TOML text (SpecError when it cannot be read).
std::vector<SpecIssue> unknownKeys(const std::string& text, const std::string& sourceName = "spec");
// The same warnings (without line numbers) for the keys kept in spec.preserved_toml.
std::vector<SpecIssue> unknownKeys(const RunSpec& spec);

} // namespace parallax
