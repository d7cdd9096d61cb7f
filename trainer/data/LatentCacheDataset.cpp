#include "trainer/data/LatentCacheDataset.h"

#include "core/formats/FormatError.h"
#include "core/formats/SafetensorsFile.h"
#include "core/util/Files.h"
#include "trainer/data/DataError.h"
#include "trainer/data/DatasetUtils.h"
#include "trainer/data/LatentBatch.h"
#include "trainer/models/PublishedWeights.h"

#include <algorithm>
#include <map>

namespace parallax {

namespace {

constexpr const char* kLatents = ".latents";
constexpr const char* kPrompt = ".prompt_embeds";
constexpr const char* kReference = ".reference.";

bool endsWith(const std::string& s, const std::string& tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

} // namespace

LatentCacheDataset::LatentCacheDataset(const std::string& folder, const ModelDims& dims, uint64_t seed)
    : m_folder(folder), m_dims(dims), m_seed(seed) {
    if (!isDirectory(folder))
        throw DataError("data.path = \"" + folder + "\" is not a folder; data.kind = \"latents\" reads a folder of "
                        "latent shards (*.safetensors)");
    std::vector<std::string> names;
    for (const std::string& name : listDirectory(folder))
        if (endsWith(name, ".safetensors")) names.push_back(name);
    std::sort(names.begin(), names.end());
    for (const std::string& name : names) addFile(joinPath(folder, name));
    if (m_samples.empty())
        throw DataError("data.path = \"" + folder + "\" holds no samples: no *.safetensors file with <name>" + kLatents +
                        " and <name>" + kPrompt + " tensors (docs/spec.md, data.kind = \"latents\")");
}

LatentCacheDataset::~LatentCacheDataset() = default;

bool LatentCacheDataset::holdsShards(const std::string& folder) {
    if (!isDirectory(folder)) return false;
    for (const std::string& name : listDirectory(folder))
        if (endsWith(name, ".safetensors")) return true;
    return false;
}

void LatentCacheDataset::addFile(const std::string& path) {
    try {
        m_files.push_back(std::make_unique<SafetensorsFile>(path));
    } catch (const FormatError& e) {
        throw DataError(std::string("data.path: ") + e.what());
    }
    const SafetensorsFile& file = *m_files.back();
    std::map<std::string, Entry> byName; // sample name -> its tensors
    std::map<std::string, std::map<int64_t, const TensorInfo*>> references; // sample name -> reference k
    for (const TensorInfo& t : file.tensors()) {
        const size_t ref = t.name.rfind(kReference);
        if (ref != std::string::npos && ref > 0) {
            const std::string k = t.name.substr(ref + std::string(kReference).size());
            if (!k.empty() && k.size() < 6 && k.find_first_not_of("0123456789") == std::string::npos) {
                references[t.name.substr(0, ref)][std::stoll(k)] = &t;
                continue;
            }
        }
        const bool latents = endsWith(t.name, kLatents), prompt = endsWith(t.name, kPrompt);
        if (!latents && !prompt) continue;
        const std::string sample = t.name.substr(0, t.name.size() - std::string(latents ? kLatents : kPrompt).size());
        Entry& e = byName.emplace(sample, Entry{m_files.size() - 1, nullptr, nullptr, {}, {}}).first->second;
        (latents ? e.latents : e.prompt) = &t;
    }
    for (const auto& [sample, byIndex] : references) {
        auto it = byName.find(sample);
        if (it == byName.end())
            throw DataError(path + ", sample \"" + sample + "\": has reference images but no " + kLatents + " or " + kPrompt);
        for (const auto& [k, t] : byIndex) {
            if (k != static_cast<int64_t>(it->second.references.size()))
                throw DataError(path + ", sample \"" + sample + "\": " + kReference +
                                std::to_string(it->second.references.size()) + " is missing; reference images are "
                                "numbered from 0 without a gap");
            it->second.references.push_back(t);
        }
    }
    for (const auto& [key, value] : file.metadata())
        if (endsWith(key, kPromptText))
            if (auto it = byName.find(key.substr(0, key.size() - std::string(kPromptText).size())); it != byName.end())
                it->second.text = value;
    for (const auto& [sample, e] : byName) {
        const std::string where = path + ", sample \"" + sample + "\": ";
        if (!e.latents || !e.prompt)
            throw DataError(where + "has " + (e.latents ? kLatents : kPrompt) + " but no " +
                            (e.latents ? kPrompt : kLatents) + "; every sample needs both");
        const std::vector<int64_t>& l = e.latents->shape;
        if (l.size() != 3 || l[0] != m_dims.channels || l[1] % 2 != 0 || l[2] % 2 != 0 || l[1] < 2 || l[2] < 2)
            throw DataError(where + "latents of " + shapeText(l) + "; expected (" + std::to_string(m_dims.channels) +
                            " channels, H, W) with H and W even");
        const std::vector<int64_t>& p = e.prompt->shape;
        if (p.size() != 2 || p[0] < 1 || p[1] != m_dims.text_dim)
            throw DataError(where + "prompt states of " + shapeText(p) + "; expected (tokens >= 1, " +
                            std::to_string(m_dims.text_dim) + ") for model.text_dim = " + std::to_string(m_dims.text_dim));
        for (const TensorInfo* r : e.references) {
            const std::vector<int64_t>& rs = r->shape;
            if (rs.size() != 3 || rs[0] != m_dims.channels || rs[1] % 2 != 0 || rs[2] % 2 != 0 || rs[1] < 2 || rs[2] < 2)
                throw DataError(where + r->name + " of " + shapeText(rs) + "; expected (" +
                                std::to_string(m_dims.channels) + " channels, h, w) with h and w even");
        }
        std::vector<const TensorInfo*> all = {e.latents, e.prompt};
        all.insert(all.end(), e.references.begin(), e.references.end());
        for (const TensorInfo* t : all)
            if (t->dtype != Dtype::F32 && t->dtype != Dtype::BF16 && t->dtype != Dtype::F16)
                throw DataError(where + t->name + " is " + dtypeName(t->dtype) + "; latents and prompt states are "
                                "F32, BF16 or F16");
        m_samples.push_back(e);
    }
}

void LatentCacheDataset::fillPromptTexts(const std::vector<std::string>& texts) {
    for (size_t i = 0; i < m_samples.size() && i < texts.size(); ++i)
        if (m_samples[i].text.empty()) m_samples[i].text = texts[i];
}

std::string LatentCacheDataset::promptText(int64_t index) const {
    return index >= 0 && index < size() ? m_samples[static_cast<size_t>(index)].text : std::string();
}

Batch LatentCacheDataset::makeBatch(const std::vector<int64_t>& indices, int64_t step) const {
    requireIndices(indices, size(), "latent cache");
    std::vector<LatentSample> samples;
    for (int64_t i : indices) {
        const Entry& e = m_samples[static_cast<size_t>(i)];
        const SafetensorsFile& file = *m_files[e.file];
        LatentSample sample{tensorOf(file.view(*e.latents)).to(torch::kFloat32),
                            tensorOf(file.view(*e.prompt)).to(torch::kFloat32), {}};
        for (const TensorInfo* r : e.references) sample.references.push_back(tensorOf(file.view(*r)).to(torch::kFloat32));
        samples.push_back(std::move(sample));
    }
    return latentBatch(samples, indices, step, m_seed, m_dims);
}

std::vector<int64_t> LatentCacheDataset::sampleGroups() const {
    std::vector<int64_t> groups;
    groups.reserve(m_samples.size());
    for (const Entry& e : m_samples) {
        std::vector<std::pair<int64_t, int64_t>> references;
        for (const TensorInfo* r : e.references) references.emplace_back(r->shape[1], r->shape[2]);
        groups.push_back(latentSampleGroup(e.latents->shape[1], e.latents->shape[2], references));
    }
    return groups;
}

std::string LatentCacheDataset::describe() const {
    return "latents: " + std::to_string(m_samples.size()) + " samples in " + std::to_string(m_files.size()) +
           " shards of " + m_folder;
}

} // namespace parallax
