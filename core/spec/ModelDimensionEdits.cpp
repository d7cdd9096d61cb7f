#include "core/spec/ModelDimensionEdits.h"

#include "core/spec/ModelDims.h"
#include "core/spec/SpecFields.h"

#include <stdexcept>

namespace parallax {

namespace {

// Each dimension: its path, its value once resolved, and the spec's own value.
struct Dimension {
    const char* path;
    int64_t ModelDims::*resolved;
    std::optional<int64_t> ModelSpec::*set;
};

const Dimension kDimensions[] = {
    {"model.layers", &ModelDims::layers, &ModelSpec::layers},
    {"model.dim", &ModelDims::dim, &ModelSpec::dim},
    {"model.heads", &ModelDims::heads, &ModelSpec::heads},
    {"model.kv_heads", &ModelDims::kv_heads, &ModelSpec::kv_heads},
    {"model.ffn", &ModelDims::ffn, &ModelSpec::ffn},
    {"model.vocab", &ModelDims::vocab, &ModelSpec::vocab},
    {"model.seq_len", &ModelDims::seq_len, &ModelSpec::seq_len},
    {"model.image_size", &ModelDims::image_size, &ModelSpec::image_size},
    {"model.channels", &ModelDims::channels, &ModelSpec::channels},
    {"model.patch", &ModelDims::patch, &ModelSpec::patch},
    {"model.vision_layers", &ModelDims::vision_layers, &ModelSpec::vision_layers},
    {"model.vision_dim", &ModelDims::vision_dim, &ModelSpec::vision_dim},
    {"model.vision_heads", &ModelDims::vision_heads, &ModelSpec::vision_heads},
    {"model.vision_ffn", &ModelDims::vision_ffn, &ModelSpec::vision_ffn},
    {"model.text_dim", &ModelDims::text_dim, &ModelSpec::text_dim},
};

const Dimension* dimensionAt(const std::string& path) {
    for (const Dimension& d : kDimensions)
        if (path == d.path) return &d;
    return nullptr;
}

std::optional<ModelDims> resolved(const ModelSpec& model) {
    try {
        return resolveModel(model);
    } catch (const std::invalid_argument&) {
        return std::nullopt;
    }
}

// Whether the spec's model reads the dimension (gpt has no image side, only qwen2_5_vl a vision tower).
bool dimensionUsed(const RunSpec& spec, const std::string& path) {
    const FieldInfo* info = specFieldInfo(path);
    return info && fieldRelevant(*info, spec);
}

void clearOverrides(ModelSpec& model) {
    for (const Dimension& d : kDimensions) (model.*(d.set)).reset();
}

} // namespace

const std::vector<std::string>& modelDimensionPaths() {
    static const std::vector<std::string> paths = [] {
        std::vector<std::string> out;
        for (const Dimension& d : kDimensions) out.emplace_back(d.path);
        return out;
    }();
    return paths;
}

std::optional<int64_t> resolvedDimension(const RunSpec& spec, const std::string& path) {
    const Dimension* d = dimensionAt(path);
    if (!d) return std::nullopt;
    const std::optional<ModelDims> dims = resolved(spec.model);
    if (!dims) return std::nullopt;
    return (*dims).*(d->resolved);
}

std::optional<int64_t>* dimensionOverride(ModelSpec& model, const std::string& path) {
    const Dimension* d = dimensionAt(path);
    return d ? &(model.*(d->set)) : nullptr;
}

bool hasDimensionOverrides(const ModelSpec& model) {
    for (const Dimension& d : kDimensions)
        if ((model.*(d.set)).has_value()) return true;
    return false;
}

std::vector<std::string> dimensionsChangedSince(const ModelSpec& now, const ModelSpec& loaded) {
    std::vector<std::string> changed;
    for (const Dimension& d : kDimensions) {
        const std::optional<int64_t>& value = now.*(d.set);
        if (value.has_value() && value != loaded.*(d.set)) changed.emplace_back(d.path);
    }
    return changed;
}

void choosePreset(RunSpec& spec, const std::string& preset) {
    if (preset == "custom") {
        const RunSpec before = spec;
        const std::optional<ModelDims> dims = resolved(before.model);
        for (const Dimension& d : kDimensions)
            if (dims && dimensionUsed(before, d.path)) spec.model.*(d.set) = (*dims).*(d.resolved);
    } else {
        clearOverrides(spec.model);
    }
    spec.model.preset = preset;
}

void resetToPreset(RunSpec& spec) {
    clearOverrides(spec.model);
    if (spec.model.preset == "custom") spec.model.preset = "tiny";
}

} // namespace parallax
