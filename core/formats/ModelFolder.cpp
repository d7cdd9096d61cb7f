#include "core/formats/ModelFolder.h"

#include "core/formats/FormatError.h"
#include "core/formats/JsonFields.h"
#include "core/formats/MappedFile.h"
#include "core/util/Files.h"

namespace parallax {

namespace {

constexpr uint64_t kMaxConfigBytes = 16 << 20; // configs are a few KiB

// A string field, or "" for null; FormatError for anything else.
std::string optionalString(JsonFields& json, const std::string& key) {
    if (json.peek() == JsonReader::Type::Null) {
        json.skip();
        return {};
    }
    if (json.peek() != JsonReader::Type::String)
        throw FormatError(json.file(), "\"" + key + "\" is " + json.kindOfNext() + ", not a string");
    return json.string();
}

// The file mapped, refused when larger than any config is.
MappedFile mapConfig(const std::string& path) {
    MappedFile map(path);
    if (map.size() > kMaxConfigBytes)
        throw FormatError(path, "is " + std::to_string(map.size()) + " bytes, too large for a model's config");
    return map;
}

void readConfig(const std::string& path, ModelFolder& folder) {
    const MappedFile map = mapConfig(path);
    JsonFields json(map.text(), path, "the config");
    json.members([&](const std::string& key) {
        if (key == "model_type") {
            folder.modelType = optionalString(json, key);
        } else if (key == "_class_name") {
            folder.className = optionalString(json, key);
        } else if (key == "architectures" && json.peek() == JsonReader::Type::Array) {
            json.items([&] { folder.architectures.push_back(optionalString(json, key)); });
        } else {
            json.skip();
        }
    });
    json.end();
}

void readModelIndex(const std::string& path, ModelFolder& folder) {
    const MappedFile map = mapConfig(path);
    JsonFields json(map.text(), path, "the model index");
    json.members([&](const std::string& key) {
        if (key == "_class_name") {
            folder.className = optionalString(json, key);
            return;
        }
        if (json.peek() != JsonReader::Type::Array) {
            json.skip(); // _diffusers_version and other settings
            return;
        }
        // A component: [library, class], or [null, null] when the pipeline has none of it.
        std::vector<std::string> pair;
        json.items([&] { pair.push_back(optionalString(json, key)); });
        if (pair.size() != 2)
            throw FormatError(path, "component \"" + key + "\" is a list of " + std::to_string(pair.size()) +
                                        " items; a component is [library, class]");
        if (!pair[1].empty()) folder.components.push_back({key, pair[0], pair[1]});
    });
    json.end();
}

} // namespace

ModelFolder readModelFolder(const std::string& folder) {
    ModelFolder model;
    model.path = folder;
    const std::string index = joinPath(folder, "model_index.json");
    const std::string config = joinPath(folder, "config.json");
    if (isRegularFile(index)) {
        model.layout = "diffusers";
        readModelIndex(index, model);
    } else if (isRegularFile(config)) {
        model.layout = "transformers";
        readConfig(config, model);
    }
    return model;
}

std::string describeModel(const ModelFolder& folder) {
    std::string text = !folder.modelType.empty() ? folder.modelType : folder.className;
    std::string archs;
    for (const std::string& a : folder.architectures) archs += (archs.empty() ? "" : ", ") + a;
    if (!archs.empty()) text += text.empty() ? archs : " (" + archs + ")";
    return text;
}

} // namespace parallax
