#include "trainer/models/SegmentAttention.h"

#include "trainer/compat/TorchCompat.h"

#include <algorithm>
#include <stdexcept>

namespace parallax {

torch::Tensor segmentAttention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                               const std::vector<int64_t>& bounds) {
    const int64_t s = q.size(0), heads = q.size(1), d = q.size(2);
    if (bounds.size() < 2 || bounds.front() != 0 || bounds.back() != s)
        throw std::invalid_argument("segmentAttention: bounds must run from 0 to the sequence length");
    const int64_t segments = static_cast<int64_t>(bounds.size()) - 1;
    int64_t longest = 0;
    for (int64_t i = 0; i < segments; ++i) longest = std::max(longest, bounds[size_t(i + 1)] - bounds[size_t(i)]);
    // Row r of segment i reads position gather[i][r] (padding repeats the segment's first row).
    std::vector<int64_t> gather(static_cast<size_t>(segments * longest)), rows;
    std::vector<uint8_t> real(gather.size(), 0);
    rows.reserve(static_cast<size_t>(s));
    for (int64_t i = 0; i < segments; ++i) {
        const int64_t begin = bounds[size_t(i)], length = bounds[size_t(i + 1)] - begin;
        for (int64_t r = 0; r < longest; ++r) {
            const size_t at = static_cast<size_t>(i * longest + r);
            gather[at] = r < length ? begin + r : begin;
            real[at] = r < length;
            if (r < length) rows.push_back(i * longest + r);
        }
    }
    const auto longs = torch::TensorOptions().dtype(torch::kInt64);
    const torch::Tensor gatherIndex = torch::tensor(gather, longs).to(q.device());
    const torch::Tensor keep = torch::tensor(rows, longs).to(q.device());
    const torch::Tensor keys = torch::from_blob(real.data(), {segments, 1, 1, longest}, torch::kUInt8)
                                   .to(q.device(), torch::kBool);
    // A padded query sees itself, so that no row is empty; its output is dropped.
    const torch::Tensor allowed =
        keys | torch::eye(longest, torch::TensorOptions().dtype(torch::kBool).device(q.device())).view({1, 1, longest, longest});
    auto padded = [&](const torch::Tensor& t) { // (segments, H, longest, D)
        return t.index_select(0, gatherIndex).view({segments, longest, heads, d}).transpose(1, 2);
    };
    const torch::Tensor out = compat::attention(padded(q), padded(k), padded(v), allowed); // (segments, H, L, D)
    return out.transpose(1, 2).reshape({segments * longest, heads * d}).index_select(0, keep);
}

} // namespace parallax
