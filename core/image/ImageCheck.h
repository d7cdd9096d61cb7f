#pragma once

#include "core/image/ImageDecoder.h"

#include <string>
#include <vector>

namespace parallax {

// One image that cannot be used, and why (ImageError::reason()).
struct ImageProblem {
    std::string path;
    std::string reason;
};

struct ImageCheckResult {
    size_t checked = 0;
    std::vector<ImageProblem> problems; // in the order of the paths given
    size_t good() const { return checked - problems.size(); }
};

// A dataset's images checked before training: each file read, its headers checked and its pixels
// decoded in full (a truncated or damaged file shows only there), so that a bad sample is named
// here and not at step 900. Never throws for a bad image; each becomes one problem.
ImageCheckResult checkImages(const std::vector<std::string>& paths, const DecodeOptions& options = {});

} // namespace parallax
