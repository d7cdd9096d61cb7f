#pragma once

// What the tests that compare with tests/reference (Debian's python3-torch) share.

#include "core/formats/SafetensorsFile.h"
#include "tests/support/Process.h"
#include "tests/support/ReferenceScripts.h"

#include <torch/torch.h>

#include <string>

namespace parallax::testing {

// A float32 tensor of a file the reference wrote, copied out of the mapping.
inline torch::Tensor readFloatTensor(const SafetensorsFile& file, const std::string& name) {
    const TensorView v = file.view(name);
    return torch::from_blob(const_cast<std::byte*>(v.data), v.shape, torch::kFloat32).clone();
}

// An int64 tensor (I64) of such a file, copied out.
inline torch::Tensor readLongTensor(const SafetensorsFile& file, const std::string& name) {
    const TensorView v = file.view(name);
    return torch::from_blob(const_cast<std::byte*>(v.data), v.shape, torch::kInt64).clone();
}

// max |got - want| / max |want|.
inline double relativeError(const torch::Tensor& got, const torch::Tensor& want) {
    return ((got - want).abs().max() / want.abs().max().clamp_min(1e-12)).item<double>();
}

} // namespace parallax::testing
