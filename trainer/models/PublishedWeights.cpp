#include "trainer/models/PublishedWeights.h"

#include "core/formats/ModelWeights.h"
#include "core/formats/SafetensorsFile.h"
#include "core/formats/SafetensorsIndex.h"
#include "core/spec/ModelConfigFile.h"
#include "core/spec/ModelKinds.h"
#include "core/util/Files.h"
#include "trainer/models/PublishedNames.h"

#include <cstring>
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

} // namespace

torch::Tensor tensorOf(const TensorView& view) {
    const torch::ScalarType type = scalarType(view.dtype);
    if (view.aligned())
        return torch::from_blob(const_cast<std::byte*>(view.data), view.shape, view.strides(), type);
    torch::Tensor copy = torch::empty(view.shape, type);
    if (view.byteSize) std::memcpy(copy.data_ptr(), view.data, view.byteSize);
    return copy;
}

PublishedWeightSource::PublishedWeightSource(const Model& model, std::string folder)
    : m_folder(modelPartFolder(folder)), m_file(modelKindInfo(model.dims().kind).weights_file) {
    const ModelWeightsCheck check = checkModelWeights(folder, model.dims());
    if (!check.ok()) {
        std::string message = "model.from = " + folder + ": its weights do not fit the model its config.json describes:";
        for (const std::string& p : check.problems) message += "\n  " + p;
        throw std::invalid_argument(message);
    }
    const std::string index = joinPath(m_folder, m_file + ".index.json");
    if (isRegularFile(index))
        for (const auto& [tensor, shard] : readSafetensorsIndex(index).weightMap) m_shardOf[tensor] = shard;
    // publishedParameters walks the units' parameters in the order named_parameters() lists them.
    const auto published = publishedParameters(model);
    const auto named = model.named_parameters();
    if (published.size() != named.size())
        throw std::logic_error("the model has " + std::to_string(named.size()) + " parameters, " +
                               std::to_string(published.size()) + " of them published");
    for (size_t i = 0; i < published.size(); ++i) {
        if (!published[i].second.is_same(named[i].value()))
            throw std::logic_error("the model's parameter " + named[i].key() + " is not its published " +
                                   published[i].first);
        m_stored[named[i].key()] = layoutName(published[i].first, check.layout);
    }
    // A tied copy is not stored (tie_word_embeddings: no lm_head.weight): it reads its source.
    for (const Model::Tie& t : model.ties()) m_stored[t.copy] = m_stored.at(t.source);
}

PublishedWeightSource::~PublishedWeightSource() = default;

torch::Tensor PublishedWeightSource::full(const std::string& name) const {
    const auto stored = m_stored.find(name);
    if (stored == m_stored.end()) throw std::invalid_argument("model.from = " + m_folder + ": no tensor for " + name);
    const auto located = m_shardOf.find(stored->second);
    const std::string shard = located == m_shardOf.end() ? m_file : located->second;
    std::unique_ptr<SafetensorsFile>& file = m_files[shard];
    if (!file) file = std::make_unique<SafetensorsFile>(joinPath(m_folder, shard));
    return tensorOf(file->view(stored->second));
}

void loadPublishedWeights(Model& model, const std::string& folder) {
    const PublishedWeightSource source(model, folder);
    torch::NoGradGuard noGrad;
    for (auto& item : model.named_parameters()) {
        torch::Tensor& parameter = item.value();
        parameter.copy_(source.full(item.key()).view(parameter.sizes()));
    }
}

} // namespace parallax
