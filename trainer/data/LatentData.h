#pragma once

#include "core/spec/RunSpec.h"
#include "trainer/data/Dataset.h"

#include <memory>
#include <string>

namespace parallax {

// data.kind = "latents": data.path is a folder of latent shards (LatentCacheDataset), read as it is,
// or an image-caption dataset (core/captions/ImageCaptions.h) whose cache `parallax-cli cache SPEC`
// made for this pipeline folder (`modelFolder`, model.from) and data.max_pixels (LatentCache.h). A
// cache that is missing, cut short or made for something else is a DataError saying how many samples
// it holds and the command that completes it. That check reads every image's size and time and the
// captions; with `verify` false it is left out (another rank made it) and the cache folder opens as
// it is, so that the ranks of a large run do not all read the dataset's files at once.
std::unique_ptr<Dataset> openLatentData(const DataSpec& data, const ModelDims& dims, uint64_t seed,
                                        const std::string& modelFolder, bool verify = true);

} // namespace parallax
