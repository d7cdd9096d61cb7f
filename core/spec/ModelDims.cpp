#include "core/spec/ModelDims.h"

#include "core/spec/ModelConfigFile.h"
#include "core/spec/ModelKinds.h"

#include <algorithm>
#include <optional>

#include <stdexcept>

namespace parallax {


int64_t ModelDims::visualTokens() const {
    // Smart resizing keeps an image's sides multiples of patch x merge and its area within
    // image_pixels: at most this many merged tokens.
    const int64_t side = saturatingMul(patch, vision_merge);
    return side > 0 ? image_pixels / saturatingMul(side, side) : 0;
}

int64_t ModelDims::visionPatches() const {
    return saturatingMul(visualTokens(), saturatingMul(vision_merge, vision_merge));
}

int64_t ModelDims::sequenceLength() const {
    // qwen_image: joint text+image attention
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

namespace {

// The dimensions a spec may set for a model of `kind`, with the config.json key of each (as the
// text config names it; "vision_config." for the tower's): a spec that names one which disagrees
// with a folder's config is an error naming both values.
struct SettableDimension {
    const char* field;
    const char* configKey;
    std::optional<int64_t> ModelSpec::*set;
    int64_t ModelDims::*resolved;
};

const SettableDimension kSettable[] = {
    {"model.layers", "num_hidden_layers", &ModelSpec::layers, &ModelDims::layers},
    {"model.dim", "hidden_size", &ModelSpec::dim, &ModelDims::dim},
    {"model.heads", "num_attention_heads", &ModelSpec::heads, &ModelDims::heads},
    {"model.kv_heads", "num_key_value_heads", &ModelSpec::kv_heads, &ModelDims::kv_heads},
    {"model.ffn", "intermediate_size", &ModelSpec::ffn, &ModelDims::ffn},
    {"model.vocab", "vocab_size", &ModelSpec::vocab, &ModelDims::vocab},
    {"model.vision_layers", "vision_config.depth", &ModelSpec::vision_layers, &ModelDims::vision_layers},
    {"model.vision_dim", "vision_config.hidden_size", &ModelSpec::vision_dim, &ModelDims::vision_dim},
    {"model.vision_heads", "vision_config.num_heads", &ModelSpec::vision_heads, &ModelDims::vision_heads},
    {"model.vision_ffn", "vision_config.intermediate_size", &ModelSpec::vision_ffn, &ModelDims::vision_ffn},
    {"model.text_dim", "joint_attention_dim", &ModelSpec::text_dim, &ModelDims::text_dim},
};

// The kind and sizes of model.from's config.json; the spec's own kind and dimensions must agree.
ModelDims fromFolder(const ModelSpec& spec) {
    const std::string field = "model.from = \"" + spec.from + "\": ";
    ModelConfigFile config;
    try {
        config = readModelConfig(spec.from);
    } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(field + e.what());
    }
    ModelDims d = config.dims;
    const std::string folderKind = choiceName(d.kind);
    if (spec.kind.value() != d.kind)
        throw std::invalid_argument("model.kind = \"" + spec.kind.name() + "\" disagrees with " + config.path +
                                    ", whose model_type \"" + config.modelType + "\" is model.kind = \"" +
                                    folderKind + "\"; set model.kind = \"" + folderKind + "\"");
    const bool tower = modelKindInfo(d.kind).vision_tower;
    for (const SettableDimension& s : kSettable) {
        const std::optional<int64_t>& value = spec.*(s.set);
        const bool visionField = std::string(s.configKey).rfind("vision_config.", 0) == 0;
        if (!value || (visionField && !tower) || *value == d.*(s.resolved)) continue;
        throw std::invalid_argument(std::string(s.field) + " = " + std::to_string(*value) + " disagrees with " +
                                    s.configKey + " = " + std::to_string(d.*(s.resolved)) + " in " + config.path +
                                    "; remove " + s.field + " (the folder's config gives the model's sizes)");
    }
    d.seq_len = spec.seq_len.value_or(kFolderSeqLen);
    if (readsLatents(modelKindInfo(d.kind))) {
        // The published size's prompt and image (its last preset), unless the spec gives its own.
        const ModelDims& published = modelKindInfo(d.kind).presets.back().dims;
        d.seq_len = spec.seq_len.value_or(published.seq_len);
        d.image_size = spec.image_size.value_or(published.image_size);
    }
    d.image_pixels = DataSpec().max_pixels;
    return d;
}

} // namespace

ModelDims resolveModel(const ModelSpec& spec) {
    if (!spec.kind.known()) {
        std::string names;
        for (const std::string& n : spec.kind.names()) names += (names.empty() ? "" : ", ") + n;
        const std::string retired = retiredModelKind(spec.kind.name());
        throw std::invalid_argument("model.kind = \"" + spec.kind.name() + "\" is unknown; " +
                                    (retired.empty() ? "" : retired + "; ") + "use one of " + names);
    }
    if (!spec.from.empty()) return fromFolder(spec);
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
    const ModelDims chosen = d;
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
    apply(d.text_dim, spec.text_dim);
    const ModelKindInfo& info = modelKindInfo(d.kind);
    if (reconstructsImages(info)) { // the architecture fixes these (the validator warns of a spec's)
        d.heads = chosen.heads;
        d.patch = chosen.patch;
        d.seq_len = chosen.seq_len;
        d.ffn = chosen.ffn;
        d.vocab = chosen.vocab;
    }
    if (publishedModel(info)) {
        apply(d.kv_heads, spec.kv_heads);
        apply(d.vision_ffn, spec.vision_ffn);
        d.image_pixels = DataSpec().max_pixels;
    }
    return d;
}

ModelDims resolveModel(const RunSpec& spec) {
    ModelDims d = resolveModel(spec.model);
    if (modelKindInfo(d.kind).vision_tower && publishedModel(modelKindInfo(d.kind)))
        d.image_pixels = std::max<int64_t>(0, spec.data.max_pixels);
    return d;
}

std::vector<std::pair<const char*, int64_t>> modelDimensionFields(const ModelDims& d) {
    std::vector<std::pair<const char*, int64_t>> fields = {{"model.layers", d.layers}, {"model.dim", d.dim},
                                                           {"model.heads", d.heads},   {"model.ffn", d.ffn},
                                                           {"model.vocab", d.vocab},   {"model.seq_len", d.seq_len}};
    const ModelKindInfo& info = modelKindInfo(d.kind);
    if (reconstructsImages(info))
        return {{"model.layers", d.layers}, {"model.dim", d.dim}, {"model.image_size", d.image_size},
                {"model.channels", d.channels}};
    if (readsLatents(info))
        return {{"model.layers", d.layers},         {"model.dim", d.dim},           {"model.heads", d.heads},
                {"model.ffn", d.ffn},               {"model.text_dim", d.text_dim}, {"model.seq_len", d.seq_len},
                {"model.image_size", d.image_size}, {"model.channels", d.channels}, {"model.patch", d.patch}};
    if (info.images)
        fields.insert(fields.end(), {{"model.image_size", d.image_size}, {"model.channels", d.channels},
                                     {"model.patch", d.patch}});
    if (publishedModel(info)) fields.insert(fields.begin() + 3, {"model.kv_heads", d.kv_heads});
    if (info.vision_tower)
        fields.insert(fields.end(), {{"model.vision_layers", d.vision_layers}, {"model.vision_dim", d.vision_dim},
                                     {"model.vision_heads", d.vision_heads}});
    if (info.vision_tower && publishedModel(info)) fields.push_back({"model.vision_ffn", d.vision_ffn});
    return fields;
}

} // namespace parallax
