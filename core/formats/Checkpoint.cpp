#include "core/formats/Checkpoint.h"

#include "core/formats/FormatError.h"
#include "core/util/Files.h"

#include <algorithm>
#include <map>

namespace parallax {

namespace {

constexpr const char* kIndexName = "model.safetensors.index.json";
constexpr const char* kSingleName = "model.safetensors";

bool endsWith(const std::string& text, const std::string& tail) {
    return text.size() >= tail.size() && text.compare(text.size() - tail.size(), tail.size(), tail) == 0;
}

std::string listed(const std::vector<std::string>& names) {
    std::string text;
    for (size_t i = 0; i < names.size() && i < 6; ++i) text += (i ? ", " : "") + names[i];
    if (names.size() > 6) text += ", ...";
    return text;
}

bool byName(const Checkpoint::Entry& a, const Checkpoint::Entry& b) {
    return a.tensor->name < b.tensor->name;
}

// The one file of `names` ending in `tail`; "" when none; FormatError when several.
std::string onlyOne(const std::vector<std::string>& names, const std::string& tail, const std::string& folder) {
    std::vector<std::string> found;
    for (const std::string& n : names)
        if (endsWith(n, tail)) found.push_back(n);
    if (found.size() > 1)
        throw FormatError(folder, "holds several " + tail + " files (" + listed(found) +
                                      ") and no " + kIndexName + " or " + kSingleName +
                                      "; name the file to open");
    return found.empty() ? std::string() : found.front();
}

} // namespace

std::string Checkpoint::locate(const std::string& folder) {
    std::vector<std::string> names;
    try {
        names = listDirectory(folder);
    } catch (const FileError& e) {
        throw FormatError(folder, e.what());
    }
    // transformers' order: the single file first, then the index.
    for (const char* name : {kSingleName, kIndexName})
        if (std::find(names.begin(), names.end(), name) != names.end()) return joinPath(folder, name);
    std::string found = onlyOne(names, ".safetensors.index.json", folder);
    if (found.empty()) found = onlyOne(names, ".safetensors", folder);
    if (found.empty())
        throw FormatError(folder, std::string("holds no ") + kSingleName + " and no " + kIndexName +
                                      " (no safetensors checkpoint)");
    return joinPath(folder, found);
}

bool Checkpoint::present(const std::string& folder) {
    try {
        locate(folder);
        return true;
    } catch (const FormatError&) {
        return false;
    }
}

Checkpoint Checkpoint::open(const std::string& path) {
    Checkpoint c;
    c.m_source = isDirectory(path) ? locate(path) : path;
    if (endsWith(c.m_source, ".json")) {
        c.m_index = readSafetensorsIndex(c.m_source);
        c.openShards(parentPath(c.m_source));
    } else {
        c.m_files.push_back(std::make_unique<SafetensorsFile>(c.m_source));
        for (const TensorInfo& t : c.m_files.front()->tensors()) c.m_entries.push_back({c.m_files.front().get(), &t});
        std::sort(c.m_entries.begin(), c.m_entries.end(), byName);
    }
    return c;
}

void Checkpoint::openShards(const std::string& folder) {
    const SafetensorsIndex& index = *m_index;
    std::map<std::string, const SafetensorsFile*> byShard;
    for (const std::string& shard : index.shards()) {
        const std::string shardPath = joinPath(folder, shard);
        if (!pathExists(shardPath))
            throw FormatError(index.path, "the weight map names the shard " + shard + ", which is missing from " +
                                              folder);
        m_files.push_back(std::make_unique<SafetensorsFile>(shardPath));
        byShard[shard] = m_files.back().get();
    }
    for (const auto& [name, shard] : index.weightMap) {
        const SafetensorsFile* file = byShard.at(shard);
        const TensorInfo* t = file->find(name);
        if (!t) {
            std::string elsewhere;
            for (const auto& [other, f] : byShard)
                if (f->find(name)) elsewhere = "; " + other + " holds it";
            throw FormatError(index.path, name, "the weight map puts it in " + shard + ", which does not hold it" +
                                                    elsewhere);
        }
        m_entries.push_back({file, t});
    }
    std::sort(m_entries.begin(), m_entries.end(), byName);
    uint64_t bytes = 0;
    for (const auto& file : m_files) {
        for (const TensorInfo& t : file->tensors()) {
            const Entry* mapped = find(t.name);
            if (!mapped)
                throw FormatError(file->path(), t.name, "is in this shard, but the weight map of " + index.path +
                                                            " does not list it");
            if (mapped->file != file.get())
                throw FormatError(file->path(), t.name, "is in this shard and in " + mapped->file->path() +
                                                            ", where the weight map puts it; a tensor belongs to "
                                                            "one shard");
            bytes += t.byteSize();
        }
    }
    if (index.totalSize && static_cast<uint64_t>(*index.totalSize) != bytes)
        m_warnings.push_back(index.path + ": metadata.total_size is " + std::to_string(*index.totalSize) +
                             " bytes, but the shards' tensors hold " + std::to_string(bytes));
}

const Checkpoint::Entry* Checkpoint::find(const std::string& name) const {
    const auto it = std::lower_bound(m_entries.begin(), m_entries.end(), name,
                                     [](const Entry& e, const std::string& n) { return e.tensor->name < n; });
    if (it == m_entries.end() || it->tensor->name != name) return nullptr;
    return &*it;
}

TensorView Checkpoint::tensor(const std::string& name) const {
    const Entry* e = find(name);
    if (!e) throw FormatError(m_source, name, "is not in this checkpoint");
    return e->file->view(*e->tensor);
}

uint64_t Checkpoint::totalBytes() const {
    uint64_t bytes = 0;
    for (const Entry& e : m_entries) bytes += e.tensor->byteSize();
    return bytes;
}

int64_t Checkpoint::parameterCount() const {
    int64_t n = 0;
    for (const Entry& e : m_entries) n += e.tensor->elementCount();
    return n;
}

} // namespace parallax
