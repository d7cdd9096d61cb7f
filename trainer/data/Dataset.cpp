#include "trainer/data/Dataset.h"

#include "trainer/data/DataError.h"
#include "trainer/data/FashionMnistDataset.h"
#include "trainer/data/ImageFolderDataset.h"
#include "trainer/data/LatentData.h"
#include "trainer/data/SyntheticDataset.h"
#include "trainer/data/TextDataset.h"
#if PARALLAX_WITH_CONVERSATIONS
#include "trainer/data/ConversationDataset.h"
#include "trainer/data/TokenizedTextDataset.h"
#endif

namespace parallax {

std::unique_ptr<Dataset> makeDataset(const DataSpec& data, const ModelDims& dims, uint64_t seed,
                                     const std::string& modelFolder, bool verify) {
    if (!data.kind.known()) {
        std::string names;
        for (const std::string& n : data.kind.names()) names += (names.empty() ? "" : ", ") + n;
        throw DataError("data.kind = \"" + data.kind.name() + "\" is unknown; use one of " + names);
    }
    switch (data.kind.value()) {
    case DataKind::Synthetic: return std::make_unique<SyntheticDataset>(dims, seed);
    case DataKind::FashionMnist: return std::make_unique<FashionMnistDataset>(data.path, "train", dims, seed);
    case DataKind::Text:
        // A published model's text goes through its tokenizer; a from-scratch model reads bytes.
        if (!modelFolder.empty()) {
#if PARALLAX_WITH_CONVERSATIONS
            return std::make_unique<TokenizedTextDataset>(data, dims, modelFolder);
#else
            throw DataError("data.kind = \"text\" with model.from tokenizes with the model's tokenizer.json, which "
                            "this worker was built without (PCRE2 and ICU: packaging/deps.sh installs them)");
#endif
        }
        return std::make_unique<TextDataset>(data.path, dims);
    case DataKind::ImageFolder: return std::make_unique<ImageFolderDataset>(data.path, dims, seed);
    case DataKind::Latents: return openLatentData(data, dims, seed, modelFolder, verify);
    case DataKind::Conversations:
#if PARALLAX_WITH_CONVERSATIONS
        return std::make_unique<ConversationDataset>(data, dims, modelFolder);
#else
        throw DataError("data.kind = \"conversations\" needs the tokenizer and the image decoders, which this worker "
                        "was built without (PCRE2, ICU, libjpeg, libpng, libwebp: packaging/deps.sh installs them)");
#endif
    }
    throw DataError("data.kind = \"" + data.kind.name() + "\" has no dataset");
}

} // namespace parallax
