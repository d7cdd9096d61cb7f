#pragma once

// What the GPU tests of the fused operations share: the largest difference relative to the
// reference's largest magnitude, and the (batch, tokens, columns) shapes of the adaLN operations'
// tests (a base-sized model's image and text streams, widths that do not fill the threads evenly, one row,
// a long sequence at a wide width).

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <tuple>

namespace parallax::test {

inline double relativeError(const torch::Tensor& a, const torch::Tensor& b) {
    const double scale = std::max(1e-12, b.abs().max().item<double>());
    return (a.to(torch::kFloat64) - b.to(torch::kFloat64)).abs().max().item<double>() / scale;
}

using AdaLnShape = std::tuple<int64_t, int64_t, int64_t>; // batch, tokens, columns

inline auto adaLnShapes() {
    return ::testing::Values(AdaLnShape{16, 1024, 768}, AdaLnShape{16, 64, 768}, AdaLnShape{3, 37, 1000},
                             AdaLnShape{1, 1, 200}, AdaLnShape{2, 4096, 3072});
}

inline std::string adaLnShapeName(const ::testing::TestParamInfo<AdaLnShape>& info) {
    return std::to_string(std::get<0>(info.param)) + "x" + std::to_string(std::get<1>(info.param)) + "x" +
           std::to_string(std::get<2>(info.param));
}

} // namespace parallax::test
