#include "trainer/models/QwenVision.h"

#include "trainer/models/Layers.h"
#include "trainer/models/QwenImageTokens.h"
#include "trainer/models/Rotary.h"
#include "trainer/models/SegmentAttention.h"

#include <algorithm>
#include <stdexcept>

namespace parallax {

namespace {

constexpr double kVisionEps = 1e-6;
constexpr double kVisionTheta = 10000.0;

std::shared_ptr<Linear> adaptable(torch::nn::Module& parent, const std::string& name, int64_t in, int64_t out) {
    auto layer = parent.register_module(name, std::make_shared<Linear>(in, out, true, kInitStd));
    layer->lora_name = name;
    return layer;
}

std::string shapeText(const torch::Tensor& t) {
    if (!t.defined()) return "[0] (none)";
    std::string out;
    for (int64_t n : t.sizes()) out += (out.empty() ? "[" : ", ") + std::to_string(n);
    return out + "]";
}

} // namespace

VisionLayout visionLayout(const torch::Tensor& imageGrid, const ModelDims& d) {
    const int64_t merge = d.vision_merge, unit = merge * merge;
    const int64_t side = std::max<int64_t>(1, d.vision_window / merge / d.patch); // window side in merged units
    VisionLayout out;
    std::vector<int64_t> order;
    std::vector<float> rows, columns;
    out.windows = {0};
    out.frames = {0};
    int64_t offset = 0; // merged units before this image
    for (const MergedGrid& g : mergedGrids(imageGrid, merge)) {
        for (int64_t frame = 0; frame < g.frames; ++frame) {
            const int64_t base = offset + frame * g.rows * g.columns;
            out.frames.push_back(out.frames.back() + g.rows * g.columns * unit);
            for (int64_t r0 = 0; r0 < g.rows; r0 += side)
                for (int64_t c0 = 0; c0 < g.columns; c0 += side) {
                    int64_t cells = 0;
                    for (int64_t r = r0; r < std::min(r0 + side, g.rows); ++r)
                        for (int64_t c = c0; c < std::min(c0 + side, g.columns); ++c, ++cells) {
                            order.push_back(base + r * g.columns + c);
                            for (int64_t i = 0; i < unit; ++i) {
                                rows.push_back(float(r * merge + i / merge));
                                columns.push_back(float(c * merge + i % merge));
                            }
                        }
                    out.windows.push_back(out.windows.back() + cells * unit);
                }
        }
        offset += g.tokens();
    }
    out.patches = offset * unit;
    out.order = torch::tensor(order, torch::kInt64);
    out.restore = torch::argsort(out.order);
    out.rows = torch::tensor(rows, torch::kFloat32);
    out.columns = torch::tensor(columns, torch::kFloat32);
    return out;
}

std::shared_ptr<const VisionLayout> VisionLayouts::of(const torch::Tensor& imageGrid) {
    const torch::Tensor g = imageGrid.defined() ? imageGrid.to(torch::kCPU, torch::kInt64).contiguous() : torch::Tensor();
    std::vector<int64_t> values(g.defined() ? g.data_ptr<int64_t>() : nullptr,
                                g.defined() ? g.data_ptr<int64_t>() + g.numel() : nullptr);
    std::lock_guard<std::mutex> lock(m_mutex);
    if (!m_layout || values != m_grid) {
        m_layout = std::make_shared<const VisionLayout>(visionLayout(imageGrid, m_dims));
        m_grid = std::move(values);
    }
    return m_layout;
}

QwenPatchEmbed::QwenPatchEmbed(const ModelDims& d, std::shared_ptr<VisionLayouts> layouts)
    : m_dims(d), m_layouts(std::move(layouts)) {
    auto proj = moduleGroup(*this, "proj");
    weight = proj->register_parameter("weight", torch::empty({d.vision_dim, 3, d.vision_temporal, d.patch, d.patch}));
}

Activation QwenPatchEmbed::forward(const Activation& /*in*/, const Batch& batch) {
    const int64_t cv = m_dims.vision_dim, values = weight.numel() / cv, unit = m_dims.vision_merge * m_dims.vision_merge;
    const std::shared_ptr<const VisionLayout> held = m_layouts->of(batch.image_grid);
    const VisionLayout& layout = *held;
    const torch::Tensor& pixels = batch.pixel_values;
    const int64_t rows = pixels.defined() ? pixels.size(0) : 0;
    if (rows != layout.patches || (pixels.defined() && (pixels.dim() != 2 || pixels.size(1) != values)))
        throw std::invalid_argument("pixel_values has shape " + shapeText(pixels) + ", but image_grid_thw asks for [" +
                                    std::to_string(layout.patches) + ", " + std::to_string(values) + "]");
    if (layout.patches == 0) return {reachingParameters(torch::zeros({0, cv}, weight.options()), *this)};
    const torch::Tensor x = torch::matmul(pixels.to(weight.scalar_type()), weight.view({cv, values}).t()); // (S, Cv)
    return {x.view({layout.patches / unit, unit, cv}).index_select(0, layout.order.to(x.device())).view({-1, cv})};
}

QwenVisionBlock::QwenVisionBlock(const ModelDims& d, int64_t index, std::shared_ptr<VisionLayouts> layouts)
    : m_dims(d), m_index(index), m_layouts(std::move(layouts)) {
    m_full = std::find(d.vision_full_attention.begin(), d.vision_full_attention.end(), index) != d.vision_full_attention.end();
    const int64_t c = d.vision_dim;
    norm1 = register_module("norm1", std::make_shared<RmsNorm>(c, kVisionEps));
    norm2 = register_module("norm2", std::make_shared<RmsNorm>(c, kVisionEps));
    auto attn = moduleGroup(*this, "attn");
    qkv = adaptable(*attn, "qkv", c, 3 * c);
    proj = adaptable(*attn, "proj", c, c);
    auto mlp = moduleGroup(*this, "mlp");
    gate_proj = adaptable(*mlp, "gate_proj", c, d.vision_ffn);
    up_proj = adaptable(*mlp, "up_proj", c, d.vision_ffn);
    down_proj = adaptable(*mlp, "down_proj", d.vision_ffn, c);
}

Activation QwenVisionBlock::forward(const Activation& in, const Batch& batch) {
    const torch::Tensor& x = in.at(0); // (S, Cv)
    const int64_t s = x.size(0);
    if (s == 0) return {reachingParameters(x, *this)};
    const std::shared_ptr<const VisionLayout> held = m_layouts->of(batch.image_grid);
    const VisionLayout& layout = *held;
    const int64_t heads = m_dims.vision_heads, d = x.size(1) / heads;
    // 2D RoPE: the first half of the frequencies turn with the patch's row, the second with its column.
    const auto f32 = torch::TensorOptions().dtype(torch::kFloat32).device(x.device());
    const int64_t half = d / 2;
    const torch::Tensor inv = 1.0 / torch::pow(kVisionTheta, torch::arange(0, half, 2, f32) / double(half));
    const torch::Tensor freqs = torch::cat({layout.rows.to(x.device()).unsqueeze(1) * inv,
                                            layout.columns.to(x.device()).unsqueeze(1) * inv}, 1); // (S, D/2)
    const torch::Tensor angle = torch::cat({freqs, freqs}, 1).unsqueeze(1);                       // (S, 1, D)
    const torch::Tensor cos = angle.cos(), sin = angle.sin();
    auto rope = [&](const torch::Tensor& t) {
        const torch::Tensor w = t.to(torch::kFloat32);
        return (w * cos + rotateHalf(w) * sin).to(t.scalar_type());
    };
    const torch::Tensor n = norm1->forward(x);
    const torch::Tensor packed = qkv->forward(n).view({s, 3, heads, d});
    const torch::Tensor attended = segmentAttention(rope(packed.select(1, 0)), rope(packed.select(1, 1)),
                                                    packed.select(1, 2), m_full ? layout.frames : layout.windows);
    const torch::Tensor mid = x + proj->forward(attended);
    const torch::Tensor m = norm2->forward(mid);
    return {mid + down_proj->forward(torch::silu(gate_proj->forward(m)) * up_proj->forward(m))};
}

QwenPatchMerger::QwenPatchMerger(const ModelDims& d, std::shared_ptr<VisionLayouts> layouts)
    : m_dims(d), m_layouts(std::move(layouts)) {
    const int64_t unit = d.vision_dim * d.vision_merge * d.vision_merge;
    ln_q = register_module("ln_q", std::make_shared<RmsNorm>(d.vision_dim, kVisionEps));
    auto mlp = moduleGroup(*this, "mlp");
    mlp0 = mlp->register_module("0", std::make_shared<Linear>(unit, unit, true, kInitStd));
    mlp2 = mlp->register_module("2", std::make_shared<Linear>(unit, d.dim, true, kInitStd));
    mlp0->lora_name = "mlp.0";
    mlp2->lora_name = "mlp.2";
}

Activation QwenPatchMerger::forward(const Activation& in, const Batch& batch) {
    const torch::Tensor& x = in.at(0); // (S, Cv), window order
    const int64_t unit = m_dims.vision_dim * m_dims.vision_merge * m_dims.vision_merge;
    if (x.size(0) == 0) return {reachingParameters(torch::zeros({0, m_dims.dim}, mlp2->weight.options()) + x.sum(), *this)};
    const torch::Tensor merged = mlp2->forward(torch::gelu(mlp0->forward(ln_q->forward(x).reshape({-1, unit}))));
    return {merged.index_select(0, m_layouts->of(batch.image_grid)->restore.to(merged.device()))}; // (units, C), processor order
}

} // namespace parallax
