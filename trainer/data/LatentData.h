#pragma once

#include "core/spec/RunSpec.h"
#include "trainer/data/Dataset.h"

#include <memory>
#include <string>

namespace parallax {

// data.kind = "latents": data.path is a folder of latent shards (LatentCacheDataset), read as it is,
// or an image-caption dataset (core/captions/ImageCaptions.h). Such a dataset is read through the
// cache `parallax-cli cache SPEC` made for this pipeline folder (`modelFolder`, model.from) and
// data.max_pixels (LatentCache.h) when that cache is complete; otherwise (missing, cut short, or made
// for something else, which is then left as it is) its images and prompts are encoded inside every
// step (CaptionPixelDataset, whose stepEncodingNote() says how many samples the cache holds). That
// check reads every image's size and time and the captions; with `verify` false the caller knows the
// cache to be complete (another rank checked it) and the cache folder opens as it is, so that the
// ranks of a large run do not all read the dataset's files at once. DataError names the file or field.
std::unique_ptr<Dataset> openLatentData(const DataSpec& data, const ModelDims& dims, uint64_t seed,
                                        const std::string& modelFolder, bool verify = true);

} // namespace parallax
