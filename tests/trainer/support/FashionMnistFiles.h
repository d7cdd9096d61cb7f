#pragma once

// Whether Debian's dataset-fashion-mnist is where FashionMnistDataset reads it by default: the tests
// that train on its clothes fail without it, saying so (packaging/deps.sh installs it for `make test`).

#include "trainer/data/FashionMnistDataset.h"

#include <filesystem>
#include <string>

namespace parallax::testing {

inline bool fashionMnistInstalled() {
    return std::filesystem::is_regular_file(std::string(FashionMnistDataset::kDefaultFolder) +
                                            "/train-images-idx3-ubyte.gz");
}

constexpr const char* kFashionMnistMissing = "dataset-fashion-mnist is not installed (packaging/deps.sh installs it)";

} // namespace parallax::testing
