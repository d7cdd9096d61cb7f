#pragma once

#include "core/spec/CheckedMath.h"
#include "core/spec/RunSpec.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace parallax {

// Concrete dimensions of a model: a preset with the spec's explicit fields applied.
// The architecture each kind builds from these numbers is described in docs/models.md; the
// parameter and FLOP estimates (Estimates.h) and the trainer's models follow that page exactly.
struct ModelDims {
    ModelKind kind = ModelKind::Gpt;
    int64_t layers = 0;        // transformer blocks (the language model's for vlm)
    int64_t dim = 0;
    int64_t heads = 0;
    int64_t ffn = 0;
    int64_t vocab = 0;
    int64_t seq_len = 0;       // gpt: context length; mmdit/vlm: text tokens per sample
    int64_t image_size = 0;    // mmdit/vlm: square images of image_size x image_size
    int64_t channels = 0;
    int64_t patch = 0;
    int64_t vision_layers = 0; // vlm
    int64_t vision_dim = 0;
    int64_t vision_heads = 0;
    int64_t vision_ffn = 0;    // 4 * vision_dim
    bool freeze_vision = false;

    // Clamped to the int64 range rather than overflowing, for dimensions not yet validated.
    int64_t headDim() const { return heads > 0 ? dim / heads : 0; }
    int64_t imageTokens() const {
        return patch > 0 ? saturatingMul(image_size / patch, image_size / patch) : 0;
    }
    int64_t patchValues() const { return saturatingMul(saturatingMul(channels, patch), patch); }
    // Positions one sample occupies in the (joint) sequence of the main transformer.
    int64_t sequenceLength() const;
    // Tokens counted for throughput: gpt/vlm the trained text positions, mmdit image+text tokens.
    int64_t tokensPerSample() const;
};

// The names of the presets of a kind, smallest first.
std::vector<std::string> modelPresets(ModelKind kind);

// Throws std::invalid_argument naming the field ("model.kind", "model.preset") when unknown.
ModelDims resolveModel(const ModelSpec& spec);

// The dimensions a model of this kind uses, by field ("model.layers", ...; image fields for mmdit
// and vlm, vision fields for vlm), in file order.
std::vector<std::pair<const char*, int64_t>> modelDimensionFields(const ModelDims& dims);

} // namespace parallax
