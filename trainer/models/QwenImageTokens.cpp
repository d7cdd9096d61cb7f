#include "trainer/models/QwenImageTokens.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace parallax {

namespace {

std::string sampleName(const std::vector<int64_t>& sampleIndex, int64_t b) {
    return "sample " + std::to_string(b < static_cast<int64_t>(sampleIndex.size()) ? sampleIndex[static_cast<size_t>(b)] : b);
}

} // namespace

std::vector<MergedGrid> mergedGrids(const torch::Tensor& imageGrid, int64_t merge) {
    std::vector<MergedGrid> out;
    if (!imageGrid.defined()) return out;
    const torch::Tensor g = imageGrid.to(torch::kCPU, torch::kInt64).contiguous();
    if (g.dim() != 2 || g.size(1) != 3)
        throw std::invalid_argument("image_grid_thw must be (images, 3), not " + std::to_string(g.dim()) + "-d");
    const auto a = g.accessor<int64_t, 2>();
    for (int64_t i = 0; i < g.size(0); ++i) {
        if (a[i][0] < 1 || a[i][1] < merge || a[i][2] < merge || a[i][1] % merge || a[i][2] % merge)
            throw std::invalid_argument("image " + std::to_string(i) + ": grid " + std::to_string(a[i][0]) + "x" +
                                        std::to_string(a[i][1]) + "x" + std::to_string(a[i][2]) +
                                        " is not a whole number of " + std::to_string(merge) + "x" +
                                        std::to_string(merge) + " units");
        out.push_back({a[i][0], a[i][1] / merge, a[i][2] / merge});
    }
    return out;
}

ImageTokens findImageTokens(const torch::Tensor& tokens, const torch::Tensor& attentionMask,
                            const torch::Tensor& imageGrid, const ModelDims& dims,
                            const std::vector<int64_t>& sampleIndex) {
    const torch::Tensor ids = tokens.to(torch::kCPU, torch::kInt64).contiguous();
    const int64_t batch = ids.size(0), length = ids.size(1);
    const torch::Tensor mask = attentionMask.defined() ? attentionMask.to(torch::kCPU, torch::kBool).contiguous()
                                                       : torch::ones({batch, length}, torch::kBool);
    const std::vector<MergedGrid> grids = mergedGrids(imageGrid, dims.vision_merge);
    const int64_t pad = dims.tokens.image_pad, start = dims.tokens.vision_start;
    ImageTokens out;
    out.positions = torch::ones({3, batch, length}, torch::kInt64);
    auto pos = out.positions.accessor<int64_t, 3>();
    const auto id = ids.accessor<int64_t, 2>();
    const auto kept = mask.accessor<bool, 2>();
    size_t image = 0;
    for (int64_t b = 0; b < batch; ++b) {
        const std::string who = sampleName(sampleIndex, b);
        std::vector<int64_t> real; // the sample's real positions, in order
        for (int64_t i = 0; i < length; ++i) {
            if (kept[b][i]) real.push_back(i);
            else if (id[b][i] == pad) throw std::invalid_argument(who + ": an <|image_pad|> token lies under padding");
        }
        const int64_t n = static_cast<int64_t>(real.size());
        auto tok = [&](int64_t j) { return id[b][real[static_cast<size_t>(j)]]; };
        auto place = [&](int64_t j, int64_t t, int64_t h, int64_t w) {
            const int64_t at = real[static_cast<size_t>(j)];
            pos[0][b][at] = t;
            pos[1][b][at] = h;
            pos[2][b][at] = w;
        };
        int64_t next = 0, images = 0;
        for (int64_t j = 0; j < n;) {
            const bool opens = tok(j) == pad && j > 0 && tok(j - 1) == start;
            if (tok(j) == pad && !opens)
                throw std::invalid_argument(who + ": an <|image_pad|> token at position " + std::to_string(real[size_t(j)]) +
                                            " follows no <|vision_start|> or is one too many for its image");
            if (!opens) {
                place(j, next, next, next);
                ++next;
                ++j;
                continue;
            }
            if (image >= grids.size())
                throw std::invalid_argument(who + ": holds an image beyond the " + std::to_string(grids.size()) +
                                            " rows of image_grid_thw");
            const MergedGrid g = grids[image];
            for (int64_t k = 0; k < g.tokens(); ++k) {
                if (j + k >= n || tok(j + k) != pad)
                    throw std::invalid_argument(who + ": image " + std::to_string(image) + " (grid " +
                                                std::to_string(g.frames) + "x" + std::to_string(g.rows * dims.vision_merge) +
                                                "x" + std::to_string(g.columns * dims.vision_merge) + ") needs " +
                                                std::to_string(g.tokens()) + " <|image_pad|> tokens, the sample has " +
                                                std::to_string(k) + " there");
                const int64_t r = (k / g.columns) % g.rows, c = k % g.columns;
                place(j + k, next, next + r, next + c);
            }
            next += std::max(g.rows, g.columns);
            j += g.tokens();
            ++image;
            ++images;
        }
        out.imagesPerSample.push_back(images);
    }
    if (image != grids.size())
        throw std::invalid_argument("image_grid_thw has " + std::to_string(grids.size()) + " rows but the samples hold " +
                                    std::to_string(image) + " images");
    return out;
}

} // namespace parallax
