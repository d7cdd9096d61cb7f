#pragma once

#include "core/spec/RunSpec.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace parallax {

// One field of a RunSpec as it appears in TOML: `section.key` (section empty for the top-level
// `name`), pointing into a spec. Reading, writing and comparing specs all walk this one table, so a
// field added to RunSpec.h and listed in specFields() is read, written and compared everywhere.
using SpecFieldRef = std::variant<std::string*, ChoiceField*, bool*, int64_t*, uint64_t*, double*, std::optional<int64_t>*,
                                  std::vector<int64_t>*, std::vector<std::string>*,
                                  std::map<std::string, std::string>*>;

struct SpecField {
    const char* section;
    const char* key;
    SpecFieldRef ref;
    std::string path() const; // "train.steps", "name"
};

// The sections in file order: model, data, train, parallel, launch, telemetry.
const std::vector<std::string>& specSections();

// Every field of `spec` in file order (top-level `name` first, then section by section).
std::vector<SpecField> specFields(RunSpec& spec);

// The paths of every known field ("name", "model.kind", ..., "launch.env").
const std::vector<std::string>& specFieldPaths();

// The value as TOML text ("500", "3e-04", "\"fp32\"", "[1, 2]", "{ A = \"1\" }"); "" for an unset
// optional. Equal text means equal value: doubles are written in their shortest exact form.
std::string fieldValueText(const SpecFieldRef& ref);

} // namespace parallax
