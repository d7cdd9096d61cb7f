#pragma once

#include "trainer/data/Dataset.h"

#include <cstdint>
#include <string>
#include <vector>

namespace parallax {

// Fashion-MNIST from the gzip IDX files of Debian's dataset-fashion-mnist package (or another
// folder holding the same four files). Images are scaled to [-1, 1], resized to the model's image
// size and repeated over its channels; labels name the class.
class FashionMnistDataset : public Dataset {
public:
    static constexpr const char* kDefaultFolder = "/usr/share/datasets/fashion-mnist";
    static constexpr int64_t kSide = 28;

    // split: "train" (60000 images) or "t10k" (10000). An empty folder means kDefaultFolder.
    // Throws DataError naming the file and the problem.
    FashionMnistDataset(const std::string& folder, const std::string& split, const ModelDims& dims, uint64_t seed);

    int64_t size() const override { return static_cast<int64_t>(m_labels.size()); }
    Batch makeBatch(const std::vector<int64_t>& indices, int64_t step) const override;
    std::string describe() const override;

    int64_t label(int64_t index) const { return m_labels.at(static_cast<size_t>(index)); }
    static const std::vector<std::string>& classNames();
    // (1, 28, 28) raw pixels as floats in [0, 255], for tests and previews.
    torch::Tensor rawImage(int64_t index) const;

private:
    std::string m_folder;
    std::string m_split;
    ModelDims m_dims;
    uint64_t m_seed;
    std::vector<uint8_t> m_pixels; // 28*28 per image
    std::vector<uint8_t> m_labels;
};

} // namespace parallax
