#pragma once

#include "trainer/models/Model.h"

#include <string>
#include <utility>
#include <vector>

namespace parallax {

// Every parameter of a single-device model as its published checkpoint names it, with the tensor
// (in registration order): what an exported folder holds, and what a loader looks up. Throws
// std::invalid_argument naming the unit when the model's kind has no published form.
std::vector<std::pair<std::string, torch::Tensor>> publishedParameters(const Model& model);

} // namespace parallax
