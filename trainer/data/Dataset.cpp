#include "trainer/data/Dataset.h"

#include "trainer/data/DataError.h"
#include "trainer/data/FashionMnistDataset.h"
#include "trainer/data/ImageFolderDataset.h"
#include "trainer/data/SyntheticDataset.h"
#include "trainer/data/TextDataset.h"

namespace parallax {

std::unique_ptr<Dataset> makeDataset(const DataSpec& data, const ModelDims& dims, uint64_t seed) {
    if (data.kind == "synthetic") return std::make_unique<SyntheticDataset>(dims, seed);
    if (data.kind == "fashion-mnist") return std::make_unique<FashionMnistDataset>(data.path, "train", dims, seed);
    if (data.kind == "text") return std::make_unique<TextDataset>(data.path, dims);
    if (data.kind == "image-folder") return std::make_unique<ImageFolderDataset>(data.path, dims, seed);
    throw DataError("data.kind = \"" + data.kind + "\" is unknown; use one of synthetic, fashion-mnist, text, image-folder");
}

} // namespace parallax
