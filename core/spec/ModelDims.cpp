#include "core/spec/ModelDims.h"

#include "core/spec/ModelKinds.h"

#include <stdexcept>

namespace parallax {


int64_t ModelDims::sequenceLength() const {
    // mmdit: joint text+image attention; vlm: image tokens then text
    return modelKindInfo(kind).images ? saturatingAdd(seq_len, imageTokens()) : seq_len;
}

int64_t ModelDims::tokensPerSample() const {
    return modelKindInfo(kind).counts_image_tokens ? saturatingAdd(seq_len, imageTokens()) : seq_len;
}

std::vector<std::string> modelPresets(ModelKind kind) {
    std::vector<std::string> names;
    for (const ModelPreset& p : modelKindInfo(kind).presets) names.emplace_back(p.name);
    return names;
}

ModelDims resolveModel(const ModelSpec& spec) {
    if (!spec.kind.known()) {
        std::string names;
        for (const std::string& n : spec.kind.names()) names += (names.empty() ? "" : ", ") + n;
        throw std::invalid_argument("model.kind = \"" + spec.kind.name() + "\" is unknown; use one of " + names);
    }
    const ModelKind kind = spec.kind.value();
    ModelDims d;
    bool found = false;
    const std::string preset = spec.preset.empty() || spec.preset == "custom" ? "tiny" : spec.preset;
    for (const ModelPreset& p : modelKindInfo(kind).presets) {
        if (preset == p.name) {
            d = p.dims;
            found = true;
        }
    }
    if (!found) {
        std::string names;
        for (const std::string& n : modelPresets(kind)) names += (names.empty() ? "" : ", ") + n;
        throw std::invalid_argument("model.preset = \"" + spec.preset + "\" is unknown for model.kind = \"" +
                                    spec.kind.name() + "\"; use one of " + names + " or custom");
    }
    auto apply = [](int64_t& field, const std::optional<int64_t>& v) {
        if (v) field = *v;
    };
    apply(d.layers, spec.layers);
    apply(d.dim, spec.dim);
    apply(d.heads, spec.heads);
    apply(d.ffn, spec.ffn);
    apply(d.vocab, spec.vocab);
    apply(d.seq_len, spec.seq_len);
    apply(d.image_size, spec.image_size);
    apply(d.channels, spec.channels);
    apply(d.patch, spec.patch);
    apply(d.vision_layers, spec.vision_layers);
    apply(d.vision_dim, spec.vision_dim);
    apply(d.vision_heads, spec.vision_heads);
    if (modelKindInfo(d.kind).vision_tower) d.vision_ffn = saturatingMul(4, d.vision_dim);
    d.freeze_vision = spec.freeze_vision;
    return d;
}

std::vector<std::pair<const char*, int64_t>> modelDimensionFields(const ModelDims& d) {
    std::vector<std::pair<const char*, int64_t>> fields = {{"model.layers", d.layers}, {"model.dim", d.dim},
                                                           {"model.heads", d.heads},   {"model.ffn", d.ffn},
                                                           {"model.vocab", d.vocab},   {"model.seq_len", d.seq_len}};
    const ModelKindInfo& info = modelKindInfo(d.kind);
    if (info.images)
        fields.insert(fields.end(), {{"model.image_size", d.image_size}, {"model.channels", d.channels},
                                     {"model.patch", d.patch}});
    if (info.vision_tower)
        fields.insert(fields.end(), {{"model.vision_layers", d.vision_layers}, {"model.vision_dim", d.vision_dim},
                                     {"model.vision_heads", d.vision_heads}});
    return fields;
}

} // namespace parallax
