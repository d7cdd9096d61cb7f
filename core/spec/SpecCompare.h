#pragma once

#include "core/spec/RunSpec.h"

#include <string>
#include <vector>

namespace parallax {

// One field whose value differs between two specs, values as TOML text ("" when unset/absent).
struct SpecDifference {
    std::string field; // "train.lr", or the path of a kept unknown key ("train.stpes")
    std::string left;
    std::string right;
};

// Every field that differs, in file order, then differing kept unknown keys (compared by value,
// not by how preserved_toml happens to be laid out). Used to show how one run differs from another.
std::vector<SpecDifference> specDifferences(const RunSpec& left, const RunSpec& right);

bool operator==(const RunSpec& left, const RunSpec& right);
bool operator!=(const RunSpec& left, const RunSpec& right);

} // namespace parallax
