#include "core/spec/ModelDims.h"

#include <stdexcept>

namespace parallax {

namespace {

struct Preset {
    ModelKind kind;
    const char* name;
    ModelDims dims;
};

ModelDims gpt(int64_t layers, int64_t dim, int64_t heads, int64_t ffn, int64_t vocab, int64_t seq) {
    ModelDims d;
    d.kind = ModelKind::Gpt;
    d.layers = layers; d.dim = dim; d.heads = heads; d.ffn = ffn; d.vocab = vocab; d.seq_len = seq;
    return d;
}

ModelDims mmdit(int64_t layers, int64_t dim, int64_t heads, int64_t ffn, int64_t text, int64_t image,
                int64_t channels, int64_t patch) {
    ModelDims d = gpt(layers, dim, heads, ffn, 256, text);
    d.kind = ModelKind::Mmdit;
    d.image_size = image; d.channels = channels; d.patch = patch;
    return d;
}

ModelDims vlm(int64_t vlayers, int64_t vdim, int64_t vheads, int64_t layers, int64_t dim, int64_t heads,
              int64_t ffn, int64_t vocab, int64_t text, int64_t image, int64_t channels, int64_t patch) {
    ModelDims d = mmdit(layers, dim, heads, ffn, text, image, channels, patch);
    d.kind = ModelKind::Vlm;
    d.vocab = vocab;
    d.vision_layers = vlayers; d.vision_dim = vdim; d.vision_heads = vheads; d.vision_ffn = 4 * vdim;
    return d;
}

// Byte-level text (vocab 256) for the small presets so that captions and text files need no
// tokenizer; the large presets use a GPT-2 sized vocabulary padded to a multiple of 128.
const Preset kPresets[] = {
    {ModelKind::Gpt, "tiny", gpt(2, 64, 4, 256, 256, 64)},
    {ModelKind::Gpt, "small", gpt(6, 256, 8, 1024, 256, 256)},
    {ModelKind::Gpt, "base", gpt(12, 768, 12, 3072, 50304, 1024)},
    {ModelKind::Gpt, "1b", gpt(24, 2048, 16, 8192, 50304, 1024)},
    {ModelKind::Mmdit, "tiny", mmdit(2, 64, 4, 256, 16, 28, 1, 4)},
    {ModelKind::Mmdit, "small", mmdit(6, 256, 8, 1024, 32, 28, 1, 2)},
    {ModelKind::Mmdit, "base", mmdit(12, 768, 12, 3072, 64, 64, 4, 2)},
    {ModelKind::Mmdit, "1b", mmdit(24, 2048, 16, 8192, 128, 64, 16, 2)},
    // base at a 1024 x 1024 image's latent (16 channels at 1/8 the size): 4096 image tokens.
    {ModelKind::Mmdit, "base-1024px", mmdit(12, 768, 12, 3072, 64, 128, 16, 2)},
    {ModelKind::Vlm, "tiny", vlm(2, 64, 4, 2, 64, 4, 256, 256, 32, 28, 1, 4)},
    {ModelKind::Vlm, "small", vlm(4, 192, 6, 6, 256, 8, 1024, 256, 48, 28, 1, 4)},
    {ModelKind::Vlm, "base", vlm(12, 768, 12, 12, 768, 12, 3072, 50304, 256, 224, 3, 14)},
    {ModelKind::Vlm, "1b", vlm(24, 1024, 16, 24, 2048, 16, 8192, 50304, 256, 224, 3, 14)},
    // base at 448 x 448: 1024 image tokens.
    {ModelKind::Vlm, "base-448px", vlm(12, 768, 12, 12, 768, 12, 3072, 50304, 256, 448, 3, 14)},
};

} // namespace

int64_t ModelDims::sequenceLength() const {
    if (kind == ModelKind::Gpt) return seq_len;
    return saturatingAdd(seq_len, imageTokens()); // mmdit: joint text+image attention; vlm: image tokens then text
}

int64_t ModelDims::tokensPerSample() const {
    if (kind == ModelKind::Mmdit) return saturatingAdd(seq_len, imageTokens());
    return seq_len;
}

std::vector<std::string> modelPresets(ModelKind kind) {
    std::vector<std::string> names;
    for (const Preset& p : kPresets)
        if (kind == p.kind) names.emplace_back(p.name);
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
    for (const Preset& p : kPresets) {
        if (kind == p.kind && preset == p.name) {
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
    if (d.kind == ModelKind::Vlm) d.vision_ffn = saturatingMul(4, d.vision_dim);
    d.freeze_vision = spec.freeze_vision;
    return d;
}

std::vector<std::pair<const char*, int64_t>> modelDimensionFields(const ModelDims& d) {
    std::vector<std::pair<const char*, int64_t>> fields = {{"model.layers", d.layers}, {"model.dim", d.dim},
                                                           {"model.heads", d.heads},   {"model.ffn", d.ffn},
                                                           {"model.vocab", d.vocab},   {"model.seq_len", d.seq_len}};
    if (d.kind != ModelKind::Gpt)
        fields.insert(fields.end(), {{"model.image_size", d.image_size}, {"model.channels", d.channels},
                                     {"model.patch", d.patch}});
    if (d.kind == ModelKind::Vlm)
        fields.insert(fields.end(), {{"model.vision_layers", d.vision_layers}, {"model.vision_dim", d.vision_dim},
                                     {"model.vision_heads", d.vision_heads}});
    return fields;
}

} // namespace parallax
