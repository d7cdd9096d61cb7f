#pragma once

#include "core/spec/RunSpec.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace parallax {

// The model's dimensions as a spec sets them: each unset dimension takes the preset's value, each
// set one overrides it. These are the edits the New run form makes to them (choosing a preset,
// freezing one as "custom", going back to the preset), Qt-free so that they are tested alone.

// The dimensions a spec may set ("model.layers", "model.dim", ...), in file order.
const std::vector<std::string>& modelDimensionPaths();

// The dimension's value once the preset is applied; nullopt when the model does not resolve
// (unknown kind or preset) or `path` is no dimension.
std::optional<int64_t> resolvedDimension(const RunSpec& spec, const std::string& path);

// The spec's own value of the dimension at `path` (unset: the preset's); null for a path that is
// no dimension.
std::optional<int64_t>* dimensionOverride(ModelSpec& model, const std::string& path);

// Whether any dimension is set in the spec rather than taken from the preset.
bool hasDimensionOverrides(const ModelSpec& model);

// The dimensions set in `now` whose value differs from `loaded`'s: the edits choosing a preset
// would discard.
std::vector<std::string> dimensionsChangedSince(const ModelSpec& now, const ModelSpec& loaded);

// Chooses `preset`. "custom" freezes what the preset gave: every dimension the kind uses becomes
// explicit at its resolved value (the others would only draw warnings). Another preset drops the
// dimensions set by hand.
void choosePreset(RunSpec& spec, const std::string& preset);

// Drops the dimensions set by hand; a custom model goes back to the smallest preset, "tiny".
void resetToPreset(RunSpec& spec);

} // namespace parallax
