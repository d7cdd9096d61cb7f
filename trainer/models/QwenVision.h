#pragma once

#include "core/spec/ModelDims.h"
#include "trainer/models/Linear.h"
#include "trainer/models/Model.h"
#include "trainer/models/RmsNorm.h"

#include <memory>
#include <mutex>
#include <vector>

namespace parallax {

// Qwen2.5-VL's vision tower as published (docs/models.md, qwen2_5_vl), in three kinds of unit:
// QwenPatchEmbed | QwenVisionBlock x vision_layers | QwenPatchMerger. Patches travel between them
// as one sequence (S, vision_dim) of all the batch's images, in window order: the merged units
// (merge x merge patches) listed window by window, which keeps each image's patches together.

// Where a batch's patches go: from batch.image_grid alone (host work, a few microseconds a unit).
struct VisionLayout {
    torch::Tensor order;          // (S / merge^2) int64: processor-order merged units in window order
    torch::Tensor restore;        // its inverse permutation
    std::vector<int64_t> windows; // window edges in patches, window order
    std::vector<int64_t> frames;  // each frame of each image: the edges of full attention
    torch::Tensor rows, columns;  // (S) float: each patch's row and column in its image, window order
    int64_t patches = 0;
};
VisionLayout visionLayout(const torch::Tensor& imageGrid, const ModelDims& dims);

// The layout of the last grid seen, shared by a model's vision units: every block of a batch (and
// its recomputation in backward) reads the one its patch embedding made. Thread-safe.
class VisionLayouts {
public:
    explicit VisionLayouts(ModelDims dims) : m_dims(std::move(dims)) {}
    std::shared_ptr<const VisionLayout> of(const torch::Tensor& imageGrid);

private:
    ModelDims m_dims;
    std::mutex m_mutex;
    std::vector<int64_t> m_grid; // the grid's values the layout was made for
    std::shared_ptr<const VisionLayout> m_layout;
};

// patch_embed: the Conv3d (vision_dim, 3, temporal, patch, patch) whose kernel is its stride, as
// one product over each row of batch.pixel_values; then the rows in window order. A batch without
// images gives (0, vision_dim). Activation out: {x (S, Cv)}.
class QwenPatchEmbed : public Unit {
public:
    QwenPatchEmbed(const ModelDims& dims, std::shared_ptr<VisionLayouts> layouts);
    Activation forward(const Activation& in, const Batch& batch) override;
    std::string kindName() const override { return "vision_embed"; }
    std::string publishedName(const std::string& local) const override { return "visual.patch_embed." + local; }
    std::optional<ModelPart> partOf(const std::string&) const override { return ModelPart::Vision; }

    torch::Tensor weight; // "proj.weight" (Cv, 3, temporal, patch, patch)

private:
    ModelDims m_dims;
    std::shared_ptr<VisionLayouts> m_layouts;
};

// One block: x + proj(attention(rope(q), rope(k), v)) over norm1(x), then x + SwiGLU(norm2(x)),
// RMSNorm eps 1e-6, every Linear with a bias; 2D RoPE (theta 10000) from each patch's row and
// column; attention within each window, or within each frame of each image for the
// fullatt_block_indexes blocks. Activation in and out: {x (S, Cv)}.
class QwenVisionBlock : public Unit {
public:
    QwenVisionBlock(const ModelDims& dims, int64_t index, std::shared_ptr<VisionLayouts> layouts);
    Activation forward(const Activation& in, const Batch& batch) override;
    std::string kindName() const override { return "vision_block"; }
    bool checkpointUnit() const override { return true; }
    std::string publishedName(const std::string& local) const override {
        return "visual.blocks." + std::to_string(m_index) + "." + local;
    }
    std::optional<ModelPart> partOf(const std::string&) const override { return ModelPart::Vision; }

    std::shared_ptr<RmsNorm> norm1, norm2;
    std::shared_ptr<Linear> qkv, proj;                  // under "attn"
    std::shared_ptr<Linear> gate_proj, up_proj, down_proj; // under "mlp"

private:
    ModelDims m_dims;
    int64_t m_index;
    bool m_full;
    std::shared_ptr<VisionLayouts> m_layouts;
};

// The merger: ln_q (RMSNorm eps 1e-6), the merge x merge patches of a unit side by side, mlp.0,
// exact GELU, mlp.2 to the language model's width; then the units back in the processor's order.
// Activation in: {x (S, Cv)}; out: {features (S / merge^2, C)}.
class QwenPatchMerger : public Unit {
public:
    QwenPatchMerger(const ModelDims& dims, std::shared_ptr<VisionLayouts> layouts);
    Activation forward(const Activation& in, const Batch& batch) override;
    std::string kindName() const override { return "merge"; }
    std::string publishedName(const std::string& local) const override { return "visual.merger." + local; }
    std::optional<ModelPart> partOf(const std::string&) const override { return ModelPart::Merger; }

    std::shared_ptr<RmsNorm> ln_q;
    std::shared_ptr<Linear> mlp0, mlp2; // "mlp.0", "mlp.2"

private:
    ModelDims m_dims;
    std::shared_ptr<VisionLayouts> m_layouts;
};

} // namespace parallax
