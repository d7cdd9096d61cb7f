#pragma once

#include "trainer/data/Dataset.h"

#include <string>
#include <vector>

namespace parallax {

// A folder of class subfolders holding images: PNG, JPEG and WebP (where the image decoders are
// built; core/image/ImageDecoder.h, EXIF orientation applied) and binary PGM (P5) or PPM (P6):
// <folder>/<class>/<image>.png. Classes are the subfolder names in sorted order. Images are read
// when a batch needs them, scaled to [-1, 1], resized and fitted to the model's channels.
class ImageFolderDataset : public Dataset {
public:
    // Checks every image's header now, so that a bad file fails the start of a run, not step 900.
    // Throws DataError naming the folder or file.
    ImageFolderDataset(const std::string& folder, const ModelDims& dims, uint64_t seed);

    int64_t size() const override { return static_cast<int64_t>(m_files.size()); }
    Batch makeBatch(const std::vector<int64_t>& indices, int64_t step) const override;
    std::string describe() const override;

    int64_t label(int64_t index) const { return m_labels.at(static_cast<size_t>(index)); }
    const std::vector<std::string>& classNames() const { return m_classes; }
    // (c, h, w) pixels scaled to [0, 1] as stored (1 or 3 channels; decoded formats: RGB).
    torch::Tensor readImage(int64_t index) const;

private:
    // Throws DataError naming the file when its header shows it cannot be read.
    static void checkHeader(const std::string& path);

    std::string m_folder;
    ModelDims m_dims;
    uint64_t m_seed;
    std::vector<std::string> m_classes;
    std::vector<std::string> m_files;
    std::vector<int64_t> m_labels;
};

} // namespace parallax
