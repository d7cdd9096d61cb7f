#pragma once

#include "core/spec/ModelDims.h"
#include "trainer/data/SyntheticDataset.h"
#include "trainer/models/Model.h"

#include <numeric>
#include <string>

namespace parallax::test {

inline ModelDims dimsOf(const std::string& kind, const std::string& preset) {
    ModelSpec spec;
    spec.kind = kind;
    spec.preset = preset;
    return resolveModel(spec);
}

// A synthetic batch of samples first, first+1, ... at step 0.
inline Batch batchOf(const ModelDims& dims, int64_t size, int64_t first = 0, uint64_t seed = 7) {
    std::vector<int64_t> indices(static_cast<size_t>(size));
    std::iota(indices.begin(), indices.end(), first);
    return SyntheticDataset(dims, seed).makeBatch(indices, 0);
}

inline double meanLoss(const Activation& out) {
    return (out.at(0) / out.at(1)).item<double>();
}

// Parameters of one pre-norm transformer block (docs/models.md).
inline int64_t blockParams(int64_t c, int64_t f) {
    return 4 * c * c + 4 * c + 2 * c * f + f + c + 4 * c;
}

// The parameter count docs/models.md gives for each kind, written out term by term.
inline int64_t documentedParams(const ModelDims& d) {
    const int64_t c = d.dim, f = d.ffn, v = d.vocab, l = d.layers, t = d.seq_len;
    if (d.kind == "gpt") {
        const int64_t embed = v * c + t * c;
        const int64_t head = 2 * c + c * v;
        return embed + l * blockParams(c, f) + head;
    }
    const int64_t p = (d.image_size / d.patch) * (d.image_size / d.patch);
    const int64_t q = d.channels * d.patch * d.patch;
    if (d.kind == "mmdit") {
        const int64_t image = q * c + c + p * c;
        const int64_t text = v * c + t * c;
        const int64_t time = (256 * c + c) + (c * c + c);
        const int64_t stream = 6 * c * c + 6 * c + 4 * c * c + 4 * c + 2 * c * f + f + c;
        const int64_t block = 2 * stream;
        // The last block's text stream: mod Linear(C, 2C), k, v.
        const int64_t last = stream + (2 * c * c + 2 * c) + 2 * (c * c + c);
        const int64_t head = (c * 2 * c + 2 * c) + (c * q + q);
        return image + text + time + (l - 1) * block + last + head;
    }
    const int64_t cv = d.vision_dim;
    const int64_t visionEmbed = q * cv + cv + p * cv;
    const int64_t vision = d.vision_layers * blockParams(cv, 4 * cv);
    const int64_t merge = 2 * cv + (cv * c + c) + (c * c + c) + v * c + (p + t) * c;
    const int64_t head = 2 * c + c * v;
    return visionEmbed + vision + merge + l * blockParams(c, f) + head;
}

// Forward FLOPs per sample from docs/models.md: 2 x every Linear's multiply-adds plus 4 S^2 C of
// attention per block.
inline double documentedForwardFlops(const ModelDims& d) {
    const double c = d.dim, f = d.ffn, v = d.vocab, l = d.layers, t = d.seq_len;
    auto block = [](double s, double w, double ffn) { return 2 * s * (4 * w * w + 2 * w * ffn) + 4 * s * s * w; };
    if (d.kind == "gpt") return l * block(t, c, f) + 2 * t * c * v;
    const double p = static_cast<double>(d.imageTokens()), q = static_cast<double>(d.patchValues());
    if (d.kind == "mmdit") {
        const double s = t + p;
        const double embed = 2 * p * q * c + 2 * (256 * c + c * c);
        const double joint = 2 * (2 * c * 6 * c) + block(s, c, f);
        // Last block: text mod (2C) and k, v over T tokens; the image stream whole; P queries over S keys.
        const double last = 2 * c * 2 * c + 2 * c * 6 * c + 2 * t * 2 * c * c + 2 * p * (4 * c * c + 2 * c * f) +
                            4 * p * s * c;
        const double head = 2 * c * 2 * c + 2 * p * c * q;
        return embed + (l - 1) * joint + last + head;
    }
    const double cv = d.vision_dim;
    const double vision = 2 * p * q * cv + d.vision_layers * block(p, cv, 4 * cv);
    const double merge = 2 * p * (cv * c + c * c);
    return vision + merge + l * block(p + t, c, f) + 2 * t * c * v;
}

} // namespace parallax::test
