#include "core/spec/Estimates.h"
#include "core/spec/ModelKinds.h"
#include "core/spec/SpecFields.h"
#include "core/spec/SpecIO.h"
#include "core/spec/SpecValidator.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace parallax {
namespace {

// Every ModelKind value has its row, at its own index, and the spec's names are the table's.
TEST(ModelKinds, EveryKindHasItsRowAndTheSpecReadsItsName) {
    const std::vector<ModelKindInfo>& kinds = modelKinds();
    ASSERT_EQ(choiceNames<ModelKind>().size(), kinds.size());
    for (size_t i = 0; i < kinds.size(); ++i) {
        const ModelKindInfo& k = kinds[i];
        EXPECT_EQ(static_cast<size_t>(k.kind), i) << k.name;
        EXPECT_EQ(&modelKindInfo(k.kind), &k);
        EXPECT_EQ(choiceNames<ModelKind>()[i], k.name);
        const RunSpec spec = parseSpec("[model]\nkind = \"" + std::string(k.name) + "\"\n");
        EXPECT_EQ(spec.model.kind, k.kind) << k.name;
        EXPECT_EQ(modelKindInfo(spec.model.kind), &k);
    }
    EXPECT_EQ(modelKindInfo(Choice<ModelKind>::named("diffusion")), nullptr);
}

// Each kind's presets resolve to dimensions of that kind, under distinct names, and the
// estimates can count every one of them.
TEST(ModelKinds, EveryPresetResolvesToItsKindAndCanBeEstimated) {
    for (const ModelKindInfo& k : modelKinds()) {
        ASSERT_FALSE(k.presets.empty()) << k.name;
        std::set<std::string> names;
        for (const ModelPreset& p : k.presets) {
            EXPECT_TRUE(names.insert(p.name).second) << k.name << " lists preset " << p.name << " twice";
            EXPECT_EQ(p.dims.kind, k.kind) << k.name << " " << p.name;
            ModelSpec m;
            m.kind = k.kind;
            m.preset = p.name;
            const ModelDims d = resolveModel(m);
            EXPECT_EQ(d.layers, p.dims.layers);
            EXPECT_GT(parameterCount(d), 0) << k.name << " " << p.name;
            EXPECT_GT(forwardFlopsPerSample(d), 0) << k.name << " " << p.name;
            int64_t blocks = 0;
            for (const UnitEstimate& u : k.units(d)) blocks += u.block ? 1 : 0;
            EXPECT_EQ(blocks, pipelineBlocks(d)) << k.name << " " << p.name;
        }
    }
}

// What a kind reads decides which dimensions it has, which fields the form offers and which
// data it may train on; nothing else names the kind.
TEST(ModelKinds, WhatAKindReadsDecidesItsFieldsAndItsData) {
    for (const ModelKindInfo& k : modelKinds()) {
        ModelSpec m;
        m.kind = k.kind;
        m.preset = k.presets.front().name;
        std::set<std::string> fields;
        for (const auto& [field, value] : modelDimensionFields(resolveModel(m))) fields.insert(field);
        EXPECT_EQ(fields.count("model.image_size"), k.images ? 1u : 0u) << k.name;
        EXPECT_EQ(fields.count("model.vision_layers"), k.vision_tower ? 1u : 0u) << k.name;

        RunSpec spec;
        spec.model = m;
        EXPECT_EQ(fieldRelevant(*specFieldInfo("model.patch"), spec), k.images && !reconstructsImages(k)) << k.name;
        EXPECT_EQ(specFieldInfo("model.freeze_vision"), nullptr) << "[finetune] freezes the parts";
        EXPECT_EQ(fieldRelevant(*specFieldInfo("finetune.freeze_vision"), spec), k.vision_tower && publishedModel(k))
            << k.name;
        EXPECT_EQ(fieldRelevant(*specFieldInfo("model.kv_heads"), spec), groupedQueryAttention(k)) << k.name;
        EXPECT_EQ(fieldRelevant(*specFieldInfo("model.vocab"), spec), hasVocabulary(k)) << k.name;
        EXPECT_EQ(fieldRelevant(*specFieldInfo("model.text_dim"), spec), readsLatents(k)) << k.name;

        spec.data.kind = DataKind::Text;
        spec.data.path = "corpus.txt";
        bool textRefused = false;
        for (const SpecIssue& issue : validateSpec(spec))
            textRefused |= issue.field == "data.kind" && !issue.warning;
        EXPECT_EQ(textRefused, k.images) << k.name;
    }
    EXPECT_EQ(modelKindNames(readsImages), "\"qwen_image_vae\"");
    EXPECT_EQ(modelKindNames(readsLatents), "\"qwen_image\"");
    EXPECT_EQ(modelKindNames(readsText), "\"gpt\", \"qwen2_5_vl\" or \"qwen2\"");
    EXPECT_EQ(modelKindNames(readsConversations), "\"qwen2_5_vl\" or \"qwen2\"");
}

} // namespace
} // namespace parallax
