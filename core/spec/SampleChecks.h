#pragma once

#include "core/spec/SpecValidator.h"

#include <vector>

namespace parallax {

// The validator's checks of [samples] (SamplesSpec in RunSpec.h): the counts within their ranges;
// for a kind that draws no images, samples.every set is a warning (ignored); for qwen_image with
// samples.every > 0, a VAE to decode them (model.from's vae/, checked on this machine unless the
// run is on other hosts) and a layout where every rank holds the whole transformer (pp = 1, ZeRO
// below 3), each an error naming the field and the way out.
std::vector<SpecIssue> sampleIssues(const RunSpec& spec, bool remote);

} // namespace parallax
