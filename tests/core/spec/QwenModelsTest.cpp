// The published Qwen architectures as core/spec writes them: parameters and names of the presets
// against the published checkpoints, units against tensors, FLOPs by hand.
#include "core/spec/Estimates.h"
#include "core/spec/FinetunePlan.h"
#include "core/spec/ModelKinds.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

namespace parallax {
namespace {

ModelDims preset(ModelKind kind, const char* name) {
    ModelSpec m;
    m.kind = kind;
    m.preset = name;
    return resolveModel(m);
}

const ModelTensor* find(const std::vector<ModelTensor>& tensors, const std::string& name) {
    for (const ModelTensor& t : tensors)
        if (t.name == name) return &t;
    return nullptr;
}

// The expected totals are the published checkpoints' (bf16: two bytes a parameter):
// - Qwen2.5-7B(-Instruct): model.safetensors.index.json's metadata.total_size = 15,231,233,024
//   bytes = 7,615,616,512 parameters; Qwen2.5-72B: 145,412,407,296 bytes = 72,706,203,648.
//   Qwen2.5-0.5B and 1.5B (one file each, tied heads): 494,032,768 and 1,543,714,304 as their
//   safetensors headers count; Qwen2.5-32B: 32,763,876,352.
// - Qwen2.5-VL adds its vision tower to the same language models (3B: Qwen2.5-3B's 36
//   layers of 2048, tied): Qwen2.5-VL-3B's published module counts are 1,505,280 for the patch
//   embedding, 19,702,200 a vision block (MLP 3420), 1,280 + 36,707,328 the merger into 2048, and
//   77,076,992 a decoder layer. The 7B's tower is then 1,505,280 + 32 x 19,702,200 + (1,280 +
//   26,219,520 + 18,353,664) = 676,550,144 (the 676.55M its vision encoder is counted as), and
//   7,615,616,512 + 676,550,144 = 8,292,166,656 is the 8.29B the 7B is published as. The 32B and
//   72B towers have an MLP of 3456 (19,840,512 a block): 33.45B and 73.41B.
TEST(QwenModels, PresetsHoldThePublishedParameterCounts) {
    EXPECT_EQ(parameterCount(preset(ModelKind::Qwen2, "0.5b")), 494032768);
    EXPECT_EQ(parameterCount(preset(ModelKind::Qwen2, "1.5b")), 1543714304);
    EXPECT_EQ(parameterCount(preset(ModelKind::Qwen2, "7b")), 15231233024 / 2);
    EXPECT_EQ(parameterCount(preset(ModelKind::Qwen2_5_Vl, "7b")), 15231233024 / 2 + 676550144);
    EXPECT_EQ(parameterCount(preset(ModelKind::Qwen2_5_Vl, "7b")), 8292166656);
    EXPECT_EQ(parameterCount(preset(ModelKind::Qwen2_5_Vl, "72b")),
              145412407296 / 2 + 1505280 + 32 * int64_t(19840512) + (1280 + 26219520 + (8192 * 5120 + 8192)));
    EXPECT_EQ(parameterCount(preset(ModelKind::Qwen2_5_Vl, "32b")),
              32763876352 + 1505280 + 32 * int64_t(19840512) + (1280 + 26219520 + (5120 * 5120 + 5120)));
    EXPECT_EQ(parameterCount(preset(ModelKind::Qwen2_5_Vl, "3b")), 3754622976);

    // Unit by unit where the published module counts say so.
    const ModelDims vl3 = preset(ModelKind::Qwen2_5_Vl, "3b");
    const std::vector<UnitEstimate> units = modelKindInfo(ModelKind::Qwen2_5_Vl).units(vl3);
    ASSERT_EQ(units.size(), size_t(1 + 32 + 1 + 1 + 36 + 1));
    EXPECT_EQ(units[0].params(), 1505280);                   // patch embedding
    EXPECT_EQ(units[1].params(), 19702200);                  // a vision block
    EXPECT_EQ(units[33].params(), 1280 + 36707328);          // merger
    EXPECT_EQ(units[34].params(), 151936 * 2048);            // embedding (the head reuses it)
    EXPECT_EQ(units[35].params(), 77076992);                 // a decoder layer
    EXPECT_EQ(units.back().params(), 2048 + 151936 * 2048);  // final norm, and the head's copy of the embedding
}

// The Qwen2.5-7B index lists 339 tensors; the 7B VL adds 390 for its tower. Names and shapes are
// the published ones, each once, and each unit holds exactly its tensors' parameters.
TEST(QwenModels, TensorsAreThePublishedNamesAndTheUnitsCountThem) {
    const ModelDims d = preset(ModelKind::Qwen2_5_Vl, "7b");
    const ModelKindInfo& kind = modelKindInfo(d.kind);
    const std::vector<ModelTensor> tensors = kind.tensors(d);
    EXPECT_EQ(tensors.size(), 339u + 390u);
    EXPECT_EQ(modelKindInfo(ModelKind::Qwen2).tensors(preset(ModelKind::Qwen2, "7b")).size(), 339u);
    std::set<std::string> names;
    for (const ModelTensor& t : tensors) EXPECT_TRUE(names.insert(t.name).second) << t.name;

    const std::map<std::string, std::vector<int64_t>> published = {
        {"visual.patch_embed.proj.weight", {1280, 3, 2, 14, 14}},
        {"visual.blocks.0.attn.qkv.weight", {3840, 1280}},
        {"visual.blocks.31.mlp.down_proj.bias", {1280}},
        {"visual.merger.ln_q.weight", {1280}},
        {"visual.merger.mlp.0.weight", {5120, 5120}},
        {"visual.merger.mlp.2.weight", {3584, 5120}},
        {"model.embed_tokens.weight", {152064, 3584}},
        {"model.layers.0.self_attn.q_proj.bias", {3584}},
        {"model.layers.27.self_attn.k_proj.weight", {512, 3584}},
        {"model.layers.3.mlp.gate_proj.weight", {18944, 3584}},
        {"model.norm.weight", {3584}},
        {"lm_head.weight", {152064, 3584}},
    };
    for (const auto& [name, shape] : published) {
        const ModelTensor* t = find(tensors, name);
        ASSERT_NE(t, nullptr) << name;
        EXPECT_EQ(t->shape, shape) << name;
    }
    EXPECT_EQ(find(tensors, "model.layers.0.self_attn.o_proj.bias"), nullptr) << "o has no bias";
    EXPECT_EQ(find(tensors, "visual.merger.ln_q.weight")->part, ModelPart::Merger);
    EXPECT_EQ(find(tensors, "visual.blocks.0.norm1.weight")->part, ModelPart::Vision);
    EXPECT_EQ(find(tensors, "model.layers.0.self_attn.o_proj.weight")->split, TensorSplit::Row);
    EXPECT_EQ(find(tensors, "model.layers.0.self_attn.v_proj.bias")->split, TensorSplit::KvColumn);
    EXPECT_FALSE(find(tensors, "lm_head.weight")->adaptable) << "PEFT leaves the output head alone";

    for (const ModelKindInfo& k : modelKinds()) {
        if (!publishedModel(k)) continue;
        for (const ModelPreset& p : k.presets) {
            std::vector<UnitEstimate> units = k.units(p.dims);
            std::vector<int64_t> held(units.size(), 0);
            for (const ModelTensor& t : k.tensors(p.dims)) held[size_t(t.unit)] += t.elements();
            for (size_t u = 0; u < units.size(); ++u)
                EXPECT_EQ(held[u], units[u].params()) << k.name << " " << p.name << " unit " << u;
        }
    }
    // The tied tiny model's lm_head is the head's copy of embed_tokens (not stored); the untied one's
    // is its own.
    const std::vector<ModelTensor> tied = kind.tensors(preset(ModelKind::Qwen2_5_Vl, "tiny-tied"));
    const std::vector<ModelTensor> untied = kind.tensors(preset(ModelKind::Qwen2_5_Vl, "tiny"));
    ASSERT_NE(find(tied, "lm_head.weight"), nullptr);
    EXPECT_EQ(find(tied, "lm_head.weight")->tiedTo, "model.embed_tokens.weight");
    ASSERT_NE(find(untied, "lm_head.weight"), nullptr);
    EXPECT_FALSE(find(untied, "lm_head.weight")->tiedCopy());
}

TEST(QwenModels, NamesInTheNestedLayoutAndLoraTargets) {
    EXPECT_EQ(layoutName("visual.blocks.0.attn.qkv.weight", WeightLayout::Nested), "model.visual.blocks.0.attn.qkv.weight");
    EXPECT_EQ(layoutName("model.layers.0.mlp.up_proj.weight", WeightLayout::Nested),
              "model.language_model.layers.0.mlp.up_proj.weight");
    EXPECT_EQ(layoutName("model.embed_tokens.weight", WeightLayout::Nested), "model.language_model.embed_tokens.weight");
    EXPECT_EQ(layoutName("lm_head.weight", WeightLayout::Nested), "lm_head.weight");
    EXPECT_EQ(layoutName("visual.merger.mlp.0.bias", WeightLayout::Flat), "visual.merger.mlp.0.bias");

    const ModelDims d = preset(ModelKind::Qwen2_5_Vl, "tiny");
    EXPECT_EQ(loraTargetNames(modelKindInfo(d.kind).tensors(d)),
              (std::vector<std::string>{"qkv", "proj", "gate_proj", "up_proj", "down_proj", "mlp.0", "mlp.2", "q_proj",
                                        "k_proj", "v_proj", "o_proj"}));
    EXPECT_TRUE(moduleNamed("visual.blocks.0.attn.proj", "proj"));
    EXPECT_FALSE(moduleNamed("model.layers.0.self_attn.o_proj", "proj")) << "o_proj is not proj";
    EXPECT_TRUE(moduleWithin("visual.merger.mlp.0", "merger"));
    EXPECT_FALSE(moduleWithin("visual.blocks.0.mlp.gate_proj", "merger"));
    EXPECT_TRUE(moduleWithin("model.norm", "norm"));
    EXPECT_FALSE(moduleWithin("model.layers.0.input_layernorm", "norm"));
}

// Forward FLOPs per sample of the tiny qwen2 (C = 64, F = 128, H = 4, 2 key/value heads of 16,
// L = 2, V = 151,936, S = 256), as QwenModels.h writes them:
//   decoder layer: 2 S (2 C^2 + 2 C KV + 3 C F) + 4 S^2 C = 2*256*(8,192 + 4,096 + 24,576) + 4*65,536*64
//                = 18,874,368 + 16,777,216 = 35,651,584; two of them 71,303,168
//   head: 2 S C V = 2*256*64*151,936 = 4,978,638,848
// Training: 3 x (71,303,168 + 4,978,638,848) = 15,149,826,048 per sample, over 256 tokens.
TEST(QwenModels, FlopsFollowTheStructure) {
    RunSpec spec;
    spec.model.kind = ModelKind::Qwen2;
    const Estimates e = estimate(spec);
    EXPECT_DOUBLE_EQ(e.flops_per_sample, 15149826048.0);
    EXPECT_DOUBLE_EQ(e.flops_per_token, 15149826048.0 / 256);
    EXPECT_EQ(e.tokens_per_step, 8 * 256);

    // qwen2_5_vl tiny at max_pixels = 56 x 56: 4 merged tokens, 16 patches of 1,176 values.
    // Tower: patch 2*16*1,176*32 = 1,204,224; a block 2*16*(4*1,024 + 3*32*48) + 4*16*W*32, with
    // W = 16 in the full blocks 1 and 3 and (56/14)^2 = 16 in the windowed ones: 278,528 + 32,768 =
    // 311,296, four of them 1,245,184; merger 2*4*(128^2 + 128*64) = 196,608.
    RunSpec vl;
    vl.model.kind = ModelKind::Qwen2_5_Vl;
    vl.data.max_pixels = 56 * 56;
    const ModelDims d = resolveModel(vl);
    EXPECT_EQ(d.visualTokens(), 4);
    EXPECT_EQ(d.visionPatches(), 16);
    const std::vector<UnitEstimate> units = modelKindInfo(d.kind).units(d);
    EXPECT_DOUBLE_EQ(units[0].flops, 1204224.0);
    EXPECT_DOUBLE_EQ(units[1].flops, 311296.0);
    EXPECT_DOUBLE_EQ(units[5].flops, 196608.0);
    EXPECT_DOUBLE_EQ(units[6].flops, 0.0) << "the embedding looks up";
}

// Training FLOPs count what trains: a frozen tower before anything trainable runs forward only,
// LoRA's frozen base weights forward and input gradients (2 x), a part that trains whole 3 x.
TEST(QwenModels, TrainingFlopsCountOnlyWhatTrains) {
    RunSpec vl;
    vl.model.kind = ModelKind::Qwen2_5_Vl;
    vl.data.max_pixels = 56 * 56;
    const ModelDims d = resolveModel(vl);
    const std::vector<UnitEstimate> units = modelKindInfo(d.kind).units(d);
    double tower = 0, language = 0; // units 0-5: patch embedding, 4 blocks, merger
    for (size_t i = 0; i < units.size(); ++i) (i < 6 ? tower : language) += units[i].flops;
    ASSERT_GT(tower, 0);
    ASSERT_GT(language, 0);
    EXPECT_DOUBLE_EQ(estimate(vl).flops_per_sample, tower + 3 * language) << "[finetune]'s defaults: tower frozen";
    vl.finetune.mode = FinetuneMode::Lora;
    EXPECT_DOUBLE_EQ(estimate(vl).flops_per_sample, tower + 2 * language);
    vl.finetune.mode = FinetuneMode::Full;
    vl.finetune.freeze_vision = vl.finetune.freeze_merger = false;
    EXPECT_DOUBLE_EQ(estimate(vl).flops_per_sample, 3 * (tower + language));
    EXPECT_DOUBLE_EQ(trainingFlopsPerSample(d, vl.finetune), 3 * (tower + language));
}

} // namespace
} // namespace parallax
