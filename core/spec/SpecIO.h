#pragma once

#include "core/spec/RunSpec.h"

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
RunSpec readSpecFile(const std::string& path); // SpecError naming the path when missing/unreadable
// TOML text of the spec; parseSpec(toToml(s)) == s for every field, unknown keys included.
std::string toToml(const RunSpec& spec);
void writeSpecFile(const RunSpec& spec, const std::string& path); // atomic (temp file + rename)

} // namespace parallax
