#include "core/formats/ModelWeights.h"

#include "core/formats/FormatError.h"
#include "core/formats/SafetensorsFile.h"
#include "core/formats/SafetensorsIndex.h"
#include "core/spec/ModelConfigFile.h"
#include "core/spec/ModelKinds.h"
#include "core/util/Files.h"

#include <map>
#include <memory>
#include <stdexcept>

namespace parallax {

namespace {

bool floating(Dtype dtype) { return dtype == Dtype::F32 || dtype == Dtype::BF16 || dtype == Dtype::F16; }

// The folder's shards, opened once each (headers only).
class Shards {
public:
    Shards(std::string folder, std::string single) : m_folder(std::move(folder)), m_single(std::move(single)) {}

    // The file that holds each tensor, by its name in the checkpoint.
    std::map<std::string, std::string> fileOf;

    // Reads the index, or the one file; false (with the problem) when neither can be read.
    bool locate(ModelWeightsCheck& check) {
        const std::string index = joinPath(m_folder, m_single + ".index.json");
        const std::string single = joinPath(m_folder, m_single);
        try {
            if (isRegularFile(index)) {
                const SafetensorsIndex read = readSafetensorsIndex(index);
                for (const auto& [tensor, shard] : read.weightMap) fileOf[tensor] = shard;
                check.files = read.shards();
                return true;
            }
            if (isRegularFile(single)) {
                const SafetensorsFile* file = open(m_single, check);
                if (!file) return false;
                for (const TensorInfo& t : file->tensors()) fileOf[t.name] = m_single;
                check.files = {m_single};
                return true;
            }
        } catch (const FormatError& e) {
            check.problems.push_back(e.what());
            return false;
        }
        check.problems.push_back(m_folder + " holds neither " + m_single + ".index.json nor " + m_single +
                                 ": no weights to start from (a folder from the Hugging Face Hub holds them)");
        return false;
    }

    // The shard opened, or null (its problem said once) when it is missing or broken.
    const SafetensorsFile* open(const std::string& name, ModelWeightsCheck& check) {
        auto it = m_files.find(name);
        if (it != m_files.end()) return it->second.get();
        std::unique_ptr<SafetensorsFile> file;
        try {
            file = std::make_unique<SafetensorsFile>(joinPath(m_folder, name));
        } catch (const FormatError& e) {
            check.problems.push_back(e.what());
        }
        return m_files.emplace(name, std::move(file)).first->second.get();
    }

    std::string path(const std::string& name) const { return joinPath(m_folder, name); }
    const std::string& folder() const { return m_folder; }

private:
    std::string m_folder;
    std::string m_single; // the kind's single weights file (ModelKindInfo::weights_file)
    std::map<std::string, std::unique_ptr<SafetensorsFile>> m_files;
};

WeightLayout likeliestLayout(const ModelKindInfo& kind, const std::vector<ModelTensor>& expected,
                             const std::map<std::string, std::string>& fileOf) {
    WeightLayout best = kind.layouts.empty() ? WeightLayout::Flat : kind.layouts.front();
    size_t bestCount = 0;
    for (WeightLayout layout : kind.layouts) {
        size_t count = 0;
        for (const ModelTensor& t : expected) count += fileOf.count(layoutName(t.name, layout));
        if (count > bestCount) {
            best = layout;
            bestCount = count;
        }
    }
    return best;
}

void checkTensor(const ModelTensor& t, const std::string& name, Shards& shards, ModelWeightsCheck& check) {
    const auto located = shards.fileOf.find(name);
    if (located == shards.fileOf.end()) {
        check.problems.push_back(shards.folder() + ": tensor " + quoteName(name) + " " + shapeText(t.shape) +
                                 " is missing from the weights (named as " + layoutDescription(check.layout) + ")");
        return;
    }
    const SafetensorsFile* file = shards.open(located->second, check);
    if (!file) return;
    const TensorInfo* info = file->find(name);
    if (!info) {
        check.problems.push_back(shards.path(located->second) + ": tensor " + quoteName(name) +
                                 ", which the index puts in this file, is not in it");
    } else if (info->shape != t.shape) {
        check.problems.push_back(shards.path(located->second) + ": tensor " + quoteName(name) + " has shape " +
                                 shapeText(info->shape) + "; the model's config gives " + shapeText(t.shape));
    } else if (!floating(info->dtype)) {
        check.problems.push_back(shards.path(located->second) + ": tensor " + quoteName(name) + " is " +
                                 dtypeName(info->dtype) + "; Parallax reads F32, BF16 and F16 weights");
    } else {
        ++check.found;
    }
}

} // namespace

ModelWeightsCheck checkModelWeights(const std::string& folder, const ModelDims& dims) {
    const ModelKindInfo& kind = modelKindInfo(dims.kind);
    if (!publishedModel(kind))
        throw std::invalid_argument("model.kind = \"" + std::string(kind.name) +
                                    "\" declares no published weights to check a folder against");
    ModelWeightsCheck check;
    std::vector<ModelTensor> expected; // what a folder stores: a tied copy is its source's tensor
    for (ModelTensor& t : kind.tensors(dims))
        if (!t.tiedCopy()) expected.push_back(std::move(t));
    check.expected = expected.size();
    Shards shards(modelPartFolder(folder), kind.weights_file);
    if (!shards.locate(check)) return check;
    check.layout = likeliestLayout(kind, expected, shards.fileOf);
    for (const ModelTensor& t : expected) checkTensor(t, layoutName(t.name, check.layout), shards, check);
    if (check.problems.size() > kMostWeightProblems) {
        const size_t more = check.problems.size() - kMostWeightProblems;
        check.problems.resize(kMostWeightProblems);
        check.problems.push_back(std::to_string(more) + " more problems (" + std::to_string(more + kMostWeightProblems) +
                                 " in all; the first " + std::to_string(kMostWeightProblems) + " are listed)");
    }
    return check;
}

} // namespace parallax
