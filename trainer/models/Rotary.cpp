#include "trainer/models/Rotary.h"

#include <numeric>
#include <stdexcept>
#include <string>

namespace parallax {

std::pair<torch::Tensor, torch::Tensor> rotaryCosSin(const torch::Tensor& positions, int64_t headDim, double theta,
                                                     const std::vector<int64_t>& mropeSection) {
    const auto options = torch::TensorOptions().dtype(torch::kFloat32).device(positions.device());
    const int64_t half = headDim / 2;
    // In float32 throughout, as the published code computes it.
    const torch::Tensor invFreq =
        1.0 / torch::pow(theta, torch::arange(0, headDim, 2, options) / static_cast<double>(headDim)); // (D/2)
    if (positions.dim() == 2) {
        const torch::Tensor freqs = positions.to(torch::kFloat32).unsqueeze(-1) * invFreq; // (B, T, D/2)
        const torch::Tensor emb = torch::cat({freqs, freqs}, -1);                          // (B, T, D)
        return {emb.cos(), emb.sin()};
    }
    if (positions.dim() != 3 || positions.size(0) != 3)
        throw std::invalid_argument("rotary positions must be (B, T) or (3, B, T)");
    if (mropeSection.size() != 3 || std::accumulate(mropeSection.begin(), mropeSection.end(), int64_t{0}) != half)
        throw std::invalid_argument("mrope_section must be three counts summing to head_dim / 2 = " +
                                    std::to_string(half));
    const torch::Tensor freqs = positions.to(torch::kFloat32).unsqueeze(-1) * invFreq; // (3, B, T, D/2)
    // Frequency i is driven by the stream of the section it falls in (the same in both halves).
    std::vector<torch::Tensor> parts;
    int64_t start = 0;
    for (int64_t stream = 0; stream < 3; ++stream) {
        parts.push_back(freqs[stream].narrow(-1, start, mropeSection[static_cast<size_t>(stream)]));
        start += mropeSection[static_cast<size_t>(stream)];
    }
    const torch::Tensor mixed = torch::cat(parts, -1);       // (B, T, D/2)
    const torch::Tensor emb = torch::cat({mixed, mixed}, -1); // (B, T, D)
    return {emb.cos(), emb.sin()};
}

torch::Tensor rotateHalf(const torch::Tensor& x) {
    const int64_t half = x.size(-1) / 2;
    return torch::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
}

torch::Tensor applyRotary(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin) {
    const torch::Tensor c = cos.unsqueeze(1).to(x.scalar_type()); // (B, 1, T, D)
    const torch::Tensor s = sin.unsqueeze(1).to(x.scalar_type());
    return x * c + rotateHalf(x) * s;
}

} // namespace parallax
