#pragma once

#include "core/spec/RunSpec.h"

#include <string>

namespace parallax {

// What a split measured by a balance probe depends on: the model, the layout, the micro-batch and
// the devices, not the split itself nor how it was chosen. A measured answer holds for every spec
// with the same key, and for no other.
std::string stageBalanceKey(const RunSpec& spec);

} // namespace parallax
