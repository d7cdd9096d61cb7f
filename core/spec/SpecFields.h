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

// One entry of a list a field is picked from: its value as a spec writes it ("gpt", "3") and what
// a person reads ("gpt: decoder language model").
struct FieldOption {
    const char* value;
    const char* label;
};

// How a field is offered to a person. The New run form is generated from these: an editor per
// offered field, by its type, with this label, help, range and options, in file order.
struct FieldInfo {
    static constexpr int64_t kNoMaximum = 2147483647; // the largest value an editor shows

    const char* label = nullptr; // "Global batch"; null: not on the form, set in the spec file
    const char* help = "";       // what it means, its unit
    int64_t minimum = 0;         // integers: the editor's range; the validator has the rules
    int64_t maximum = kNoMaximum;
    const char* example = "";    // text and numbers: shown while empty ("3e-4", "node1:8")
    const char* unsetText = "";  // integers: what the minimum, or no value, means ("auto")
    std::vector<FieldOption> options; // a list to pick from (a choice, a small integer); else free
    // Whether the field matters for this spec (image sizes for an image model); null: always. The
    // form shows a field that does not matter only while it differs from the default, so that the
    // validator's warning about it can be read.
    bool (*relevant)(const RunSpec&) = nullptr;

    bool offered() const { return label != nullptr; }
    FieldInfo withRange(int64_t lo, int64_t hi = kNoMaximum) const;
    FieldInfo withExample(const char* text) const;
    FieldInfo withUnsetText(const char* text) const;
    FieldInfo withOptions(std::vector<FieldOption> list) const;
    FieldInfo when(bool (*predicate)(const RunSpec&)) const;
};

// A field the form offers, with its label and help.
FieldInfo offered(const char* label, const char* help = "");

struct SpecField {
    const char* section;
    const char* key;
    SpecFieldRef ref;
    FieldInfo info;
    std::string path() const; // "train.steps", "name"
};

// The sections in file order: model, finetune, data, train, parallel, launch, telemetry, samples, retention.
const std::vector<std::string>& specSections();

// Every field of `spec` in file order (top-level `name` first, then section by section).
std::vector<SpecField> specFields(RunSpec& spec);

// How the field at `path` is offered; null for a path that is no field.
const FieldInfo* specFieldInfo(const std::string& path);

// Whether `info.relevant` holds for `spec` (true without a predicate).
bool fieldRelevant(const FieldInfo& info, const RunSpec& spec);

// The paths of every known field ("name", "model.kind", ..., "launch.env").
const std::vector<std::string>& specFieldPaths();

// The value as TOML text ("500", "3e-04", "\"fp32\"", "[1, 2]", "{ A = \"1\" }"); "" for an unset
// optional. Equal text means equal value: doubles are written in their shortest exact form.
std::string fieldValueText(const SpecFieldRef& ref);

} // namespace parallax
