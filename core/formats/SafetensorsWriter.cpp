#include "core/formats/SafetensorsWriter.h"

#include "core/util/FileWriter.h"
#include "core/util/Files.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <unistd.h>

namespace parallax {

namespace {

using Json = nlohmann::ordered_json;

std::string quoted(const std::string& text) {
    try {
        return Json(text).dump();
    } catch (const Json::exception&) {
        throw std::invalid_argument("\"" + text + "\" is not UTF-8 text; tensor names and metadata must be");
    }
}

} // namespace

std::string safetensorsHeader(const std::vector<TensorData>& tensors, const TensorMetadata& metadata,
                              std::vector<TensorInfo>& layout, std::vector<size_t>& order) {
    std::vector<const std::string*> names;
    for (const TensorData& t : tensors) names.push_back(&t.name);
    if (const std::string* repeated = firstRepeatedName(names))
        throw std::invalid_argument("tensor \"" + *repeated + "\" is given twice");
    order.resize(tensors.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        if (tensors[a].dtype != tensors[b].dtype) return tensors[a].dtype > tensors[b].dtype;
        return tensors[a].name < tensors[b].name;
    });
    // Compact, with the keys in the order Hugging Face's writer puts them.
    std::string json = "{";
    if (!metadata.empty()) {
        json += "\"__metadata__\":{";
        for (size_t i = 0; i < metadata.size(); ++i)
            json += (i ? "," : "") + quoted(metadata[i].first) + ":" + quoted(metadata[i].second);
        json += "}";
    }
    layout.clear();
    uint64_t offset = 0;
    for (size_t k = 0; k < order.size(); ++k) {
        const TensorData& t = tensors[order[k]];
        if (t.name.empty() || t.name == "__metadata__")
            throw std::invalid_argument("a tensor may not be named \"" + t.name + "\" in a safetensors file");
        uint64_t bytes = 0;
        std::string problem;
        if (!tensorByteSize(t.dtype, t.shape, bytes, problem))
            throw std::invalid_argument("tensor \"" + t.name + "\": " + problem);
        if (bytes > 0 && !t.data) throw std::invalid_argument("tensor \"" + t.name + "\" has no data");
        layout.push_back({t.name, t.dtype, t.shape, offset, offset + bytes});
        json += (json.size() > 1 ? "," : "") + quoted(t.name) + ":{\"dtype\":\"" + dtypeName(t.dtype) +
                "\",\"shape\":[";
        for (size_t i = 0; i < t.shape.size(); ++i) json += (i ? "," : "") + std::to_string(t.shape[i]);
        json += "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(offset + bytes) + "]}";
        offset += bytes;
    }
    json += "}";
    json.append((8 - json.size() % 8) % 8, ' ');
    return json;
}

void writeSafetensorsTemporary(const std::string& path, const std::string& tmp,
                               const std::vector<TensorData>& tensors, const TensorMetadata& metadata) {
    std::vector<TensorInfo> layout;
    std::vector<size_t> order;
    const std::string header = safetensorsHeader(tensors, metadata, layout, order);
    FileWriter out(tmp);
    unsigned char length[8];
    for (int i = 0; i < 8; ++i) length[i] = static_cast<unsigned char>(uint64_t(header.size()) >> (8 * i));
    out.write(length, sizeof length);
    out.write(header.data(), header.size());
    for (size_t k = 0; k < layout.size(); ++k)
        if (layout[k].byteSize() > 0) out.write(tensors[order[k]].data, static_cast<size_t>(layout[k].byteSize()));
    if (!out.finish()) {
        ::unlink(tmp.c_str()); // gives back what a full disk took; `path` keeps its old contents
        throw FileError(out.describe(path));
    }
}

void writeSafetensors(const std::string& path, const std::vector<TensorData>& tensors,
                      const TensorMetadata& metadata) {
    const std::string tmp = path + ".tmp";
    writeSafetensorsTemporary(path, tmp, tensors, metadata);
    renamePath(tmp, path);
}

} // namespace parallax
