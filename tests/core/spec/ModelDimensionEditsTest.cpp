#include "core/spec/ModelDimensionEdits.h"

#include "core/spec/ModelDims.h"

#include <gtest/gtest.h>

namespace parallax {
namespace {

TEST(ModelDimensionEdits, ResolvesEachDimensionFromThePresetOrTheSpec) {
    RunSpec s;
    s.model.preset = "small";
    const ModelDims dims = resolveModel(s.model);
    EXPECT_EQ(resolvedDimension(s, "model.layers"), dims.layers);
    EXPECT_EQ(resolvedDimension(s, "model.vocab"), dims.vocab);
    s.model.heads = 3;
    EXPECT_EQ(resolvedDimension(s, "model.heads"), 3) << "the spec's own value overrides the preset";
    EXPECT_EQ(resolvedDimension(s, "model.kind"), std::nullopt) << "no dimension";
    s.model.preset = "no-such-preset";
    EXPECT_EQ(resolvedDimension(s, "model.layers"), std::nullopt) << "the model does not resolve";
}

TEST(ModelDimensionEdits, EveryPathIsADimensionOfTheSpec) {
    ModelSpec m;
    ASSERT_EQ(modelDimensionPaths().size(), 15u);
    EXPECT_EQ(modelDimensionPaths().front(), "model.layers");
    for (const std::string& path : modelDimensionPaths()) {
        std::optional<int64_t>* slot = dimensionOverride(m, path);
        ASSERT_NE(slot, nullptr) << path;
        *slot = 7;
    }
    EXPECT_EQ(m.layers, 7);
    EXPECT_EQ(m.vision_heads, 7);
    EXPECT_EQ(dimensionOverride(m, "model.preset"), nullptr);
    EXPECT_EQ(dimensionOverride(m, "layers"), nullptr) << "paths name their section";
}

TEST(ModelDimensionEdits, CustomFreezesWhatTheKindUsesAndAPresetDropsIt) {
    RunSpec s; // gpt, tiny
    const ModelDims tiny = resolveModel(s.model);
    EXPECT_FALSE(hasDimensionOverrides(s.model));
    choosePreset(s, "custom");
    EXPECT_EQ(s.model.preset, "custom");
    EXPECT_EQ(s.model.layers, tiny.layers);
    EXPECT_EQ(s.model.dim, tiny.dim);
    EXPECT_EQ(s.model.seq_len, tiny.seq_len);
    // gpt reads no image and has no vision tower: those would only draw warnings.
    EXPECT_FALSE(s.model.image_size.has_value());
    EXPECT_FALSE(s.model.vision_layers.has_value());
    EXPECT_TRUE(hasDimensionOverrides(s.model));

    choosePreset(s, "small");
    EXPECT_EQ(s.model.preset, "small");
    EXPECT_FALSE(hasDimensionOverrides(s.model));
    EXPECT_EQ(resolvedDimension(s, "model.layers"), resolveModel(s.model).layers);
}

TEST(ModelDimensionEdits, ResetGoesBackToThePresetAndCustomToTiny) {
    RunSpec s;
    s.model.preset = "small";
    s.model.layers = 3;
    resetToPreset(s);
    EXPECT_EQ(s.model.preset, "small");
    EXPECT_FALSE(hasDimensionOverrides(s.model));
    choosePreset(s, "custom");
    resetToPreset(s);
    EXPECT_EQ(s.model.preset, "tiny");
    EXPECT_FALSE(hasDimensionOverrides(s.model));
}

TEST(ModelDimensionEdits, NamesTheDimensionsSetByHandSinceLoaded) {
    ModelSpec loaded;
    loaded.layers = 4;
    ModelSpec now = loaded;
    EXPECT_TRUE(dimensionsChangedSince(now, loaded).empty()) << "set, but as loaded";
    now.layers = 5;
    now.heads = 2;
    EXPECT_EQ(dimensionsChangedSince(now, loaded), (std::vector<std::string>{"model.layers", "model.heads"}));
    now.layers.reset();
    EXPECT_EQ(dimensionsChangedSince(now, loaded), (std::vector<std::string>{"model.heads"}))
        << "a dimension back on the preset is nothing to lose";
}

} // namespace
} // namespace parallax
