#include "core/formats/SafetensorsIndex.h"

#include "core/formats/FormatError.h"
#include "core/formats/JsonFields.h"
#include "core/formats/MappedFile.h"
#include "core/formats/SafetensorsHeader.h"

#include <algorithm>

namespace parallax {

namespace {

bool endsWith(const std::string& text, const std::string& tail) {
    return text.size() >= tail.size() && text.compare(text.size() - tail.size(), tail.size(), tail) == 0;
}

void checkShardName(const std::string& tensor, const std::string& shard, const std::string& path) {
    if (shard.find('/') != std::string::npos || shard.find('\0') != std::string::npos || shard == "." ||
        shard == "..")
        throw FormatError(path, tensor, "the weight map names the shard " + quoteName(shard) +
                                            ", which is not a plain file name in the index's folder");
    if (!endsWith(shard, ".safetensors"))
        throw FormatError(path, tensor, "the weight map names the shard " + quoteName(shard) +
                                            ", which is not a .safetensors file");
}

void readMetadata(JsonFields& json, SafetensorsIndex& index) {
    if (json.peek() != JsonReader::Type::Object)
        throw FormatError(index.path, "\"metadata\" is " + json.kindOfNext() + ", not an object");
    json.members([&](const std::string& key) {
        if (key != "total_size") {
            json.skip(); // total_parameters and others: informative only
            return;
        }
        std::string problem;
        const auto size = json.count(problem);
        if (!size || *size > uint64_t(INT64_MAX))
            throw FormatError(index.path, "\"metadata\".\"total_size\" is " + (size ? "too large" : problem) +
                                              ", not a number of bytes");
        index.totalSize = static_cast<int64_t>(*size);
    });
}

void readWeightMap(JsonFields& json, SafetensorsIndex& index, bool& seen) {
    if (seen) throw FormatError(index.path, "\"weight_map\" appears twice");
    seen = true;
    if (json.peek() != JsonReader::Type::Object)
        throw FormatError(index.path, "\"weight_map\" is " + json.kindOfNext() + ", not an object of tensor names");
    json.members([&](const std::string& tensor) {
        if (json.peek() != JsonReader::Type::String)
            throw FormatError(index.path, tensor, "the weight map gives " + json.kindOfNext() +
                                                      " where the name of its shard file belongs");
        std::string shard = json.string();
        checkShardName(tensor, shard, index.path);
        index.weightMap.emplace_back(tensor, std::move(shard));
    });
}

} // namespace

std::vector<std::string> SafetensorsIndex::shards() const {
    std::vector<std::string> files;
    for (const auto& entry : weightMap) files.push_back(entry.second);
    std::sort(files.begin(), files.end());
    files.erase(std::unique(files.begin(), files.end()), files.end());
    return files;
}

SafetensorsIndex readSafetensorsIndex(const std::string& path) {
    const MappedFile map(path);
    if (map.size() > kMaxIndexBytes)
        throw FormatError(path, "is " + std::to_string(map.size()) + " bytes; an index is at most " +
                                    std::to_string(kMaxIndexBytes) + " (is this a checkpoint's index?)");
    SafetensorsIndex index;
    index.path = path;
    JsonFields json(map.text(), path, "the index");
    if (json.peek() != JsonReader::Type::Object)
        throw FormatError(path, "the index is " + json.kindOfNext() + ", not a JSON object with a weight_map");
    bool haveMap = false, haveMetadata = false;
    json.members([&](const std::string& key) {
        if (key == "weight_map") {
            readWeightMap(json, index, haveMap);
        } else if (key == "metadata") {
            if (haveMetadata) throw FormatError(path, "\"metadata\" appears twice");
            haveMetadata = true;
            readMetadata(json, index);
        } else {
            json.skip();
        }
    });
    json.end();
    if (!haveMap) throw FormatError(path, "the index has no \"weight_map\" (tensor name -> shard file)");
    if (index.weightMap.empty()) throw FormatError(path, "the index's weight map lists no tensor");
    std::vector<const std::string*> names;
    for (const auto& entry : index.weightMap) names.push_back(&entry.first);
    if (const std::string* repeated = firstRepeatedName(std::move(names)))
        throw FormatError(path, *repeated, "appears twice in the weight map");
    return index;
}

} // namespace parallax
