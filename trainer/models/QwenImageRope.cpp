#include "trainer/models/QwenImageRope.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace parallax {

namespace {

// Angles (N, pairs) of float32 positions (N) on one axis of `pairs` pairs.
torch::Tensor axisAngles(const torch::Tensor& positions, int64_t pairs, double theta) {
    const auto f32 = torch::TensorOptions().dtype(torch::kFloat32).device(positions.device());
    const torch::Tensor exponent = torch::arange(0, 2 * pairs, 2, f32).div(static_cast<double>(2 * pairs));
    const torch::Tensor inverse = 1.0 / torch::pow(torch::full({}, theta, f32), exponent); // (pairs)
    return torch::outer(positions, inverse);
}

// Centred positions of n rows (or columns): -(n - n / 2) .. n / 2 - 1.
torch::Tensor centred(int64_t n, const torch::TensorOptions& options) {
    return torch::arange(-(n - n / 2), n / 2, options);
}

} // namespace

QwenImageRotary qwenImageRotary(int64_t h, int64_t w, int64_t textTokens, const std::vector<int64_t>& axes,
                                double theta, const torch::Device& device) {
    return qwenImageRotary(std::vector<PackedGrid>{{h, w}}, textTokens, axes, theta, device);
}

QwenImageRotary qwenImageRotary(const std::vector<PackedGrid>& grids, int64_t textTokens,
                                const std::vector<int64_t>& axes, double theta, const torch::Device& device) {
    if (axes.size() != 3) throw std::invalid_argument("qwen_image rotary: three axes (frame, row, column) expected");
    if (grids.empty()) throw std::invalid_argument("qwen_image rotary: at least one image grid expected");
    const auto f32 = torch::TensorOptions().dtype(torch::kFloat32).device(device);
    std::vector<torch::Tensor> images;
    int64_t textStart = 0;
    for (size_t i = 0; i < grids.size(); ++i) {
        const int64_t h = grids[i].rows, w = grids[i].columns;
        const torch::Tensor rows = centred(h, f32).view({h, 1}).expand({h, w}).reshape({-1});
        const torch::Tensor cols = centred(w, f32).view({1, w}).expand({h, w}).reshape({-1});
        const torch::Tensor frames = torch::full({h * w}, static_cast<double>(i), f32);
        images.push_back(torch::cat({axisAngles(frames, axes[0], theta), axisAngles(rows, axes[1], theta),
                                     axisAngles(cols, axes[2], theta)},
                                    1)); // (h w, D / 2)
        textStart = std::max({textStart, h / 2, w / 2});
    }
    const torch::Tensor image = torch::cat(images, 0);
    const torch::Tensor text_positions = torch::arange(textTokens, f32) + static_cast<double>(textStart);
    std::vector<torch::Tensor> textAxes;
    for (int64_t pairs : axes) textAxes.push_back(axisAngles(text_positions, pairs, theta));
    const torch::Tensor text = torch::cat(textAxes, 1); // (T, D / 2)
    return {image.cos(), image.sin(), text.cos(), text.sin()};
}

torch::Tensor applyPairRotary(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin) {
    const int64_t b = x.size(0), s = x.size(1), heads = x.size(2), d = x.size(3);
    const torch::Tensor pairs = x.to(torch::kFloat32).reshape({b, s, heads, d / 2, 2});
    const torch::Tensor re = pairs.select(-1, 0), im = pairs.select(-1, 1); // (B, S, H, D / 2)
    const torch::Tensor c = cos.view({1, s, 1, d / 2}), sn = sin.view({1, s, 1, d / 2});
    const torch::Tensor out = torch::stack({re * c - im * sn, re * sn + im * c}, -1); // (B, S, H, D / 2, 2)
    return out.reshape({b, s, heads, d}).to(x.scalar_type());
}

} // namespace parallax
