#include "core/spec/ModelConfigFile.h"

#include "core/spec/ConfigJson.h"
#include "core/spec/ModelKinds.h"
#include "core/util/Files.h"

#include <cmath>
#include <stdexcept>

namespace parallax {

namespace {

using configjson::ConfigReader;
using configjson::Json;
using configjson::parseConfig;
using configjson::shown;

std::string supportedTypes() {
    std::string text;
    for (const ModelKindInfo& k : modelKinds())
        for (const std::string& type : k.model_types)
            text += (text.empty() ? "" : ", ") + type + " (" + k.description + ")";
    return text;
}

const ModelKindInfo& kindOf(const ConfigReader& config, std::string& modelType) {
    const Json* type = config.in(config.top(), "model_type");
    if (!type) type = config.in(config.top(), "_class_name"); // a diffusers model
    if (!type || !type->is_string())
        throw std::invalid_argument(config.where("model_type", "") + " is " + (type ? shown(*type) : "missing") +
                                    "; the folder's kind comes from it. Parallax reads " + supportedTypes());
    modelType = type->get<std::string>();
    const ModelKindInfo* kind = modelKindOfType(modelType);
    if (!kind)
        throw std::invalid_argument(config.path() + ": model_type \"" + modelType +
                                    "\" is no model Parallax reads; it reads " + supportedTypes());
    return *kind;
}

// rope_theta and mrope_section from rope_parameters (transformers 5) or rope_scaling with
// rope_theta beside it.
void readRope(const ConfigReader& config, ModelDims& d, bool mrope) {
    const Json* parameters = config.text("rope_parameters");
    const Json* scaling = config.text("rope_scaling");
    const Json* rope = parameters && parameters->is_object() ? parameters : scaling;
    const std::string key = rope == parameters ? "rope_parameters" : "rope_scaling";
    d.rope_theta = config.number(config.text("rope_theta"), "rope_theta", 10000.0);
    if (rope && !rope->is_object())
        throw std::invalid_argument(config.where(key, "") + " is " + shown(*rope) + ", not an object");
    if (rope) {
        d.rope_theta = config.number(config.in(*rope, "rope_theta"), key + ".rope_theta", d.rope_theta);
        const Json* type = config.in(*rope, "rope_type");
        if (!type) type = config.in(*rope, "type");
        const std::string name = type && type->is_string() ? type->get<std::string>() : "default";
        if (name != "default" && name != "mrope")
            throw std::invalid_argument(config.where(key, "") + " has type \"" + name +
                                        "\", which Parallax does not compute; it computes plain rotary embeddings "
                                        "(with mrope_section for qwen2_5_vl)");
        if (const Json* section = config.in(*rope, "mrope_section")) {
            if (!section->is_array())
                throw std::invalid_argument(config.where(key + ".mrope_section", "") + " is " + shown(*section) +
                                            ", not a list");
            for (const Json& v : *section) d.mrope_section.push_back(config.count(v, key + ".mrope_section"));
        }
    }
    if (mrope && d.mrope_section.size() != 3)
        throw std::invalid_argument(config.path() + ": rope_scaling or rope_parameters must give mrope_section, the "
                                                     "rotary pairs of the t, h and w positions (three numbers)");
}

void readLanguageModel(const ConfigReader& config, ModelDims& d) {
    d.dim = config.textCount("hidden_size");
    d.layers = config.textCount("num_hidden_layers");
    d.heads = config.textCount("num_attention_heads");
    d.kv_heads = config.textCount("num_key_value_heads", d.heads);
    d.ffn = config.textCount("intermediate_size");
    d.vocab = config.textCount("vocab_size");
    d.max_positions = config.textCount("max_position_embeddings", 32768);
    d.rms_eps = config.number(config.text("rms_norm_eps"), "rms_norm_eps", 1e-6);
    d.tie_embeddings = config.flag("tie_word_embeddings", false);
    if (const Json* headDim = config.text("head_dim")) {
        const int64_t given = config.count(*headDim, "head_dim");
        if (given * d.heads != d.dim)
            throw std::invalid_argument(config.where("head_dim", "") + " = " + std::to_string(given) +
                                        " is not hidden_size / num_attention_heads = " + std::to_string(d.dim) + " / " +
                                        std::to_string(d.heads) + ", which the model assumes");
    }
    if (config.flag("use_sliding_window", false))
        throw std::invalid_argument(config.where("use_sliding_window", "") +
                                    " is true; Parallax computes full causal attention: set it to false");
    d.tokens.eos = config.token("eos_token_id", -1);
}

// A diffusers QwenImageTransformer2DModel's config.json: the default configuration only.
void readTransformer(const ConfigReader& config, ModelDims& d) {
    const auto count = [&](const std::string& key) { return config.textCount(key); };
    d.patch = count("patch_size");
    d.channels = count("out_channels");
    const int64_t in = count("in_channels"), head = count("attention_head_dim");
    if (d.patch != 2 || in != d.channels * 4)
        throw std::invalid_argument(config.path() + ": patch_size = " + std::to_string(d.patch) + " and in_channels = " +
                                    std::to_string(in) + "; Qwen-Image packs 2 x 2 latents of out_channels (in_channels "
                                    "= 4 x out_channels, patch_size = 2)");
    d.layers = count("num_layers");
    d.heads = count("num_attention_heads");
    d.dim = d.heads * head;
    d.ffn = 4 * d.dim;
    d.kv_heads = 0;
    d.vocab = 0;
    d.text_dim = count("joint_attention_dim");
    d.rope_theta = 10000;
    d.rms_eps = 1e-6;
    d.mrope_section.clear();
    const Json* axes = config.text("axes_dims_rope");
    if (!axes || !axes->is_array() || axes->size() != 3)
        throw std::invalid_argument(config.where("axes_dims_rope", "") + " is " + (axes ? shown(*axes) : "missing") +
                                    "; it gives the rotary channels of the frame, row and column axes (three numbers)");
    int64_t channels = 0;
    for (const Json& v : *axes) {
        const int64_t n = config.count(v, "axes_dims_rope");
        if (n % 2 != 0)
            throw std::invalid_argument(config.where("axes_dims_rope", "") + " holds " + std::to_string(n) +
                                        ", not an even number of channels");
        d.mrope_section.push_back(n / 2);
        channels += n;
    }
    if (channels != head)
        throw std::invalid_argument(config.where("axes_dims_rope", "") + " sums to " + std::to_string(channels) +
                                    ", not attention_head_dim = " + std::to_string(head));
    d.zero_cond_t = config.flag("zero_cond_t", false);
    for (const char* variant : {"guidance_embeds", "use_additional_t_cond", "use_layer3d_rope"})
        if (config.flag(variant, false))
            throw std::invalid_argument(config.where(variant, "") + " is true; Parallax computes Qwen-Image's "
                                                                    "transformer as published, where it is false");
}

void readVisionTower(const ConfigReader& config, ModelDims& d) {
    const Json* vision = config.in(config.top(), "vision_config");
    if (!vision || !vision->is_object())
        throw std::invalid_argument(config.where("vision_config", "") + " is " + (vision ? shown(*vision) : "missing") +
                                    "; the vision tower's sizes come from it");
    const std::string section = "vision_config";
    const auto count = [&](const std::string& key, std::optional<int64_t> fallback) {
        const Json* v = config.in(*vision, key);
        if (!v && !fallback)
            throw std::invalid_argument(config.where(key, section) + " is missing; the vision tower's sizes come from it");
        return v ? config.count(*v, key, section) : *fallback;
    };
    d.vision_layers = count("depth", std::nullopt);
    d.vision_dim = count("hidden_size", std::nullopt);
    d.vision_heads = count("num_heads", std::nullopt);
    d.vision_ffn = count("intermediate_size", std::nullopt);
    d.patch = count("patch_size", 14);
    d.vision_merge = count("spatial_merge_size", 2);
    d.vision_temporal = count("temporal_patch_size", 2);
    d.vision_window = count("window_size", 112);
    d.channels = count(config.in(*vision, "in_chans") ? "in_chans" : "in_channels", 3);
    if (d.channels != 3)
        throw std::invalid_argument(config.where("in_channels", section) + " = " + std::to_string(d.channels) +
                                    "; the patch embedding reads RGB images (3)");
    const int64_t out = count("out_hidden_size", std::nullopt);
    if (out != d.dim)
        throw std::invalid_argument(config.where("out_hidden_size", section) + " = " + std::to_string(out) +
                                    " is not hidden_size = " + std::to_string(d.dim) +
                                    ": the merger projects into the language model's width");
    d.vision_full_attention.clear();
    if (const Json* full = config.in(*vision, "fullatt_block_indexes")) {
        if (!full->is_array())
            throw std::invalid_argument(config.where("fullatt_block_indexes", section) + " is " + shown(*full) +
                                        ", not a list");
        for (const Json& v : *full) {
            if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= d.vision_layers)
                throw std::invalid_argument(config.where("fullatt_block_indexes", section) + " holds " + shown(v) +
                                            ", not a block of the " + std::to_string(d.vision_layers) + " (0 to " +
                                            std::to_string(d.vision_layers - 1) + ")");
            d.vision_full_attention.push_back(v.get<int64_t>());
        }
    } else {
        d.vision_full_attention = {7, 15, 23, 31};
    }
    d.tokens.image_pad = config.token("image_token_id", 151655);
    d.tokens.vision_start = config.token("vision_start_token_id", 151652);
    d.tokens.vision_end = config.token("vision_end_token_id", 151653);
}

} // namespace

std::string modelPartFolder(const std::string& folder) {
    return isRegularFile(joinPath(folder, "model_index.json")) ? joinPath(folder, "transformer") : folder;
}

ModelConfigFile readModelConfig(const std::string& folder) {
    ModelConfigFile file;
    file.path = joinPath(modelPartFolder(folder), "config.json");
    const Json json = parseConfig(folder, file.path);
    const ConfigReader config(json, file.path);
    const ModelKindInfo& kind = kindOf(config, file.modelType);
    ModelDims& d = file.dims;
    d = kind.presets.front().dims; // every field a config does not give keeps the kind's own
    d.kind = kind.kind;
    d.mrope_section.clear();
    if (readsLatents(kind)) {
        readTransformer(config, d);
        return file;
    }
    readLanguageModel(config, d);
    readRope(config, d, kind.vision_tower);
    if (kind.vision_tower) readVisionTower(config, d);
    return file;
}

} // namespace parallax
