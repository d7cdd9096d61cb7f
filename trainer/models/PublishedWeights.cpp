#include "trainer/models/PublishedWeights.h"

#include "core/formats/ModelWeights.h"
#include "core/formats/SafetensorsFile.h"
#include "core/formats/SafetensorsIndex.h"
#include "core/util/Files.h"
#include "trainer/models/PublishedNames.h"

#include <cstring>
#include <map>
#include <memory>
#include <stdexcept>

namespace parallax {

namespace {

torch::ScalarType scalarType(Dtype dtype) {
    switch (dtype) {
    case Dtype::F32: return torch::kFloat32;
    case Dtype::BF16: return torch::kBFloat16;
    case Dtype::F16: return torch::kFloat16;
    default: throw std::invalid_argument(std::string("weights of type ") + dtypeName(dtype) + " are not read");
    }
}

// The view's values as a tensor: over the mapping where it is aligned, else copied.
torch::Tensor tensorOf(const TensorView& view) {
    const torch::ScalarType type = scalarType(view.dtype);
    if (view.aligned())
        return torch::from_blob(const_cast<std::byte*>(view.data), view.shape, view.strides(), type);
    torch::Tensor copy = torch::empty(view.shape, type);
    if (view.byteSize) std::memcpy(copy.data_ptr(), view.data, view.byteSize);
    return copy;
}

} // namespace

void loadPublishedWeights(Model& model, const std::string& folder) {
    const ModelWeightsCheck check = checkModelWeights(folder, model.dims());
    if (!check.ok()) {
        std::string message = "model.from = " + folder + ": its weights do not fit the model its config.json describes:";
        for (const std::string& p : check.problems) message += "\n  " + p;
        throw std::invalid_argument(message);
    }
    std::map<std::string, std::string> fileOf; // tensor -> shard
    const std::string index = joinPath(folder, "model.safetensors.index.json");
    if (isRegularFile(index)) {
        for (const auto& [tensor, shard] : readSafetensorsIndex(index).weightMap) fileOf[tensor] = shard;
    }
    std::map<std::string, std::unique_ptr<SafetensorsFile>> files;
    auto fileFor = [&](const std::string& name) -> const SafetensorsFile& {
        const auto located = fileOf.find(name);
        const std::string shard = located == fileOf.end() ? "model.safetensors" : located->second;
        std::unique_ptr<SafetensorsFile>& file = files[shard];
        if (!file) file = std::make_unique<SafetensorsFile>(joinPath(folder, shard));
        return *file;
    };
    torch::NoGradGuard noGrad;
    for (auto& [name, parameter] : publishedParameters(model)) {
        const std::string stored = layoutName(name, check.layout);
        parameter.copy_(tensorOf(fileFor(stored).view(stored)).view(parameter.sizes()));
    }
}

} // namespace parallax
