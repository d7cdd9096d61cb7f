// model.from: a Hugging Face folder's config.json gives the kind and the sizes, in both shapes
// people have (text fields at the top level, or under text_config as transformers 5 writes them).
#include "core/spec/Estimates.h"
#include "core/spec/ModelConfigFile.h"
#include "core/spec/SpecValidator.h"
#include "tests/support/Process.h"

#include <gtest/gtest.h>

#include <fstream>

#include <sys/stat.h>

namespace parallax {
namespace {

using testing::TempDir;

// Qwen2.5-VL-3B-Instruct's config.json as published (the language model's fields at the top level).
const char* const kPublished = R"({
  "architectures": ["Qwen2_5_VLForConditionalGeneration"],
  "attention_dropout": 0.0, "bos_token_id": 151643, "eos_token_id": 151645,
  "vision_start_token_id": 151652, "vision_end_token_id": 151653, "vision_token_id": 151654,
  "image_token_id": 151655, "video_token_id": 151656, "hidden_act": "silu", "hidden_size": 2048,
  "initializer_range": 0.02, "intermediate_size": 11008, "max_position_embeddings": 128000,
  "max_window_layers": 70, "model_type": "qwen2_5_vl", "num_attention_heads": 16, "num_hidden_layers": 36,
  "num_key_value_heads": 2, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "sliding_window": 32768,
  "tie_word_embeddings": true, "torch_dtype": "bfloat16", "transformers_version": "4.41.2",
  "use_cache": true, "use_sliding_window": false,
  "vision_config": {"depth": 32, "hidden_act": "silu", "hidden_size": 1280, "intermediate_size": 3420,
    "num_heads": 16, "in_chans": 3, "out_hidden_size": 2048, "patch_size": 14, "spatial_merge_size": 2,
    "spatial_patch_size": 14, "window_size": 112, "fullatt_block_indexes": [7, 15, 23, 31],
    "tokens_per_second": 2, "temporal_patch_size": 2},
  "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]},
  "vocab_size": 151936
})";

// The same model as transformers 5 writes it: text_config, rope_parameters, ids at the top.
const char* const kNested = R"({
  "architectures": ["Qwen2_5_VLForConditionalGeneration"], "model_type": "qwen2_5_vl",
  "image_token_id": 151655, "video_token_id": 151656, "vision_start_token_id": 151652,
  "vision_end_token_id": 151653, "tie_word_embeddings": true, "dtype": "bfloat16",
  "text_config": {"model_type": "qwen2_5_vl_text", "hidden_size": 2048, "intermediate_size": 11008,
    "num_hidden_layers": 36, "num_attention_heads": 16, "num_key_value_heads": 2, "vocab_size": 151936,
    "max_position_embeddings": 128000, "rms_norm_eps": 1e-06, "eos_token_id": 151645,
    "use_sliding_window": false, "sliding_window": null, "layer_types": ["full_attention"],
    "rope_parameters": {"rope_type": "default", "rope_theta": 1000000.0, "mrope_section": [16, 24, 24]}},
  "vision_config": {"model_type": "qwen2_5_vl", "depth": 32, "hidden_size": 1280, "intermediate_size": 3420,
    "num_heads": 16, "in_channels": 3, "out_hidden_size": 2048, "patch_size": 14, "spatial_merge_size": 2,
    "temporal_patch_size": 2, "window_size": 112, "fullatt_block_indexes": [7, 15, 23, 31]}
})";

void write(const std::string& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    ASSERT_TRUE(out.good()) << path;
}

std::string folderWith(const TempDir& dir, const std::string& name, const std::string& config) {
    const std::string folder = dir.path() + "/" + name;
    EXPECT_EQ(::mkdir(folder.c_str(), 0755), 0);
    write(folder + "/config.json", config);
    return folder;
}

std::string errorOf(const std::string& folder) {
    try {
        readModelConfig(folder);
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "";
}

void expectSameModel(const ModelDims& a, const ModelDims& b) {
    EXPECT_EQ(a.kind, b.kind);
    for (const auto& [field, value] : modelDimensionFields(a)) {
        if (std::string(field) == "model.seq_len") continue; // the spec's, not the config's
        bool seen = false;
        for (const auto& [other, v] : modelDimensionFields(b))
            if (std::string(field) == other) {
                EXPECT_EQ(value, v) << field;
                seen = true;
            }
        EXPECT_TRUE(seen) << field;
    }
    EXPECT_EQ(a.tie_embeddings, b.tie_embeddings);
    EXPECT_DOUBLE_EQ(a.rope_theta, b.rope_theta);
    EXPECT_DOUBLE_EQ(a.rms_eps, b.rms_eps);
    EXPECT_EQ(a.max_positions, b.max_positions);
    EXPECT_EQ(a.mrope_section, b.mrope_section);
    EXPECT_EQ(a.patch, b.patch);
    EXPECT_EQ(a.vision_merge, b.vision_merge);
    EXPECT_EQ(a.vision_temporal, b.vision_temporal);
    EXPECT_EQ(a.vision_window, b.vision_window);
    EXPECT_EQ(a.vision_full_attention, b.vision_full_attention);
    EXPECT_EQ(a.tokens.image_pad, b.tokens.image_pad);
    EXPECT_EQ(a.tokens.vision_start, b.tokens.vision_start);
    EXPECT_EQ(a.tokens.vision_end, b.tokens.vision_end);
    EXPECT_EQ(a.tokens.eos, b.tokens.eos);
}

TEST(ModelConfigFile, BothShapesGiveThePublishedModel) {
    TempDir dir;
    const ModelConfigFile flat = readModelConfig(folderWith(dir, "flat", kPublished));
    const ModelConfigFile nested = readModelConfig(folderWith(dir, "nested", kNested));
    EXPECT_EQ(flat.modelType, "qwen2_5_vl");
    EXPECT_EQ(flat.path, dir.path() + "/flat/config.json");
    expectSameModel(flat.dims, nested.dims);

    ModelSpec preset;
    preset.kind = ModelKind::Qwen2_5_Vl;
    preset.preset = "3b";
    ModelDims published = resolveModel(preset);
    EXPECT_EQ(published.rms_eps, 1e-6);
    expectSameModel(flat.dims, published);
    EXPECT_EQ(flat.dims.tokens.eos, 151645);
    EXPECT_EQ(flat.dims.tokens.image_pad, 151655);
    EXPECT_TRUE(flat.dims.tie_embeddings);

    // A spec from the folder is the 3B preset with the spec's seq_len (2048 unset).
    ModelSpec from;
    from.kind = ModelKind::Qwen2_5_Vl;
    from.from = dir.path() + "/nested";
    const ModelDims d = resolveModel(from);
    EXPECT_EQ(d.seq_len, kFolderSeqLen);
    EXPECT_EQ(parameterCount(d), 3754622976);
    from.seq_len = 4096;
    from.layers = 36; // agrees: fine
    EXPECT_EQ(resolveModel(from).seq_len, 4096);
}

TEST(ModelConfigFile, AQwen2LanguageModelWithRopeScalingNull) {
    TempDir dir;
    const std::string folder = folderWith(dir, "lm", R"({"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2",
        "hidden_size": 896, "intermediate_size": 4864, "num_hidden_layers": 24, "num_attention_heads": 14,
        "num_key_value_heads": 2, "vocab_size": 151936, "rope_theta": 1000000.0, "rope_scaling": null,
        "rms_norm_eps": 1e-06, "tie_word_embeddings": true, "eos_token_id": [151645, 151643],
        "max_position_embeddings": 32768, "use_sliding_window": false})");
    const ModelConfigFile c = readModelConfig(folder);
    EXPECT_EQ(c.dims.kind, ModelKind::Qwen2);
    EXPECT_EQ(c.dims.tokens.eos, 151645) << "the first of a list";
    ModelSpec m;
    m.kind = ModelKind::Qwen2;
    m.from = folder;
    EXPECT_EQ(parameterCount(resolveModel(m)), 494032768);
}

TEST(ModelConfigFile, ASizeThatDisagreesIsAnErrorNamingBothValues) {
    TempDir dir;
    const std::string folder = folderWith(dir, "vl", kPublished);
    RunSpec spec;
    spec.model.kind = ModelKind::Qwen2_5_Vl;
    spec.model.from = folder;
    spec.model.layers = 24;
    spec.model.vision_ffn = 3456;
    bool named = false;
    for (const SpecIssue& issue : validateSpec(spec))
        named |= issue.field == "model.layers" && !issue.warning &&
                 issue.message == "model.layers = 24 disagrees with num_hidden_layers = 36 in " + folder +
                                      "/config.json; remove model.layers (the folder's config gives the model's sizes)";
    EXPECT_TRUE(named);

    spec.model.layers.reset();
    EXPECT_THROW(resolveModel(spec.model), std::invalid_argument);
    try {
        resolveModel(spec.model);
    } catch (const std::invalid_argument& e) {
        EXPECT_EQ(std::string(e.what()), "model.vision_ffn = 3456 disagrees with vision_config.intermediate_size = 3420 in " +
                                             folder + "/config.json; remove model.vision_ffn (the folder's config gives "
                                                      "the model's sizes)");
    }
    spec.model.vision_ffn.reset();
    spec.model.kind = ModelKind::Qwen2;
    try {
        resolveModel(spec.model);
        FAIL() << "a qwen2 spec read a qwen2_5_vl folder";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("model.kind = \"qwen2\" disagrees with " + folder +
                                             "/config.json, whose model_type \"qwen2_5_vl\" is model.kind = "
                                             "\"qwen2_5_vl\"; set model.kind = \"qwen2_5_vl\""),
                  std::string::npos);
    }
}

TEST(ModelConfigFile, MissingCorruptOrForeignConfigsAreNamed) {
    TempDir dir;
    EXPECT_NE(errorOf(dir.path() + "/none").find(dir.path() + "/none is not a folder"), std::string::npos);
    const std::string empty = dir.path() + "/empty";
    ASSERT_EQ(::mkdir(empty.c_str(), 0755), 0);
    EXPECT_NE(errorOf(empty).find(empty + "/config.json is missing"), std::string::npos);

    const std::string broken = folderWith(dir, "broken", std::string(kPublished).substr(0, 300));
    EXPECT_NE(errorOf(broken).find(broken + "/config.json is not valid JSON"), std::string::npos);
    const std::string deep = folderWith(dir, "deep", "{\"a\":" + std::string(100000, '[') + std::string(100000, ']') + "}");
    EXPECT_NE(errorOf(deep).find("nests deeper than 16 levels"), std::string::npos);
    const std::string llama = folderWith(dir, "llama", R"({"model_type": "llama", "hidden_size": 4096})");
    EXPECT_EQ(errorOf(llama), llama + "/config.json: model_type \"llama\" is no model Parallax reads; it reads "
                                      "qwen2_5_vl (Qwen2.5-VL (vision tower, merger, Qwen2.5 language model)), qwen2 "
                                      "(Qwen2 / Qwen2.5 language model), QwenImageTransformer2DModel (Qwen-Image diffusion "
                                      "transformer (trains on latents and prompt states))");
    std::string text = kPublished;
    text.replace(text.find("\"num_hidden_layers\": 36"), 23, "\"num_hidden_layers\": \"36\"");
    const std::string typed = folderWith(dir, "typed", text);
    EXPECT_EQ(errorOf(typed), typed + "/config.json: \"num_hidden_layers\" is \"36\", not a positive whole number");
    text = kNested;
    text.replace(text.find("\"out_hidden_size\": 2048"), 23, "\"out_hidden_size\": 1024");
    const std::string projector = folderWith(dir, "projector", text);
    EXPECT_NE(errorOf(projector).find("\"vision_config.out_hidden_size\" = 1024 is not hidden_size = 2048"),
              std::string::npos);
    text = kNested;
    text.replace(text.find("\"mrope_section\": [16, 24, 24]"), 29, "\"factor\": 2.0");
    const std::string noMrope = folderWith(dir, "nomrope", text);
    EXPECT_NE(errorOf(noMrope).find("must give mrope_section"), std::string::npos);

    // The validator shows a folder's problem on model.from.
    RunSpec spec;
    spec.model.kind = ModelKind::Qwen2_5_Vl;
    spec.model.from = llama;
    bool onFrom = false;
    for (const SpecIssue& issue : validateSpec(spec))
        onFrom |= issue.field == "model.from" && !issue.warning &&
                  issue.message.find("model.from = \"" + llama + "\": " + llama + "/config.json: model_type \"llama\"") == 0;
    EXPECT_TRUE(onFrom);
    EXPECT_THROW(estimate(spec), std::invalid_argument);
}

} // namespace
} // namespace parallax
