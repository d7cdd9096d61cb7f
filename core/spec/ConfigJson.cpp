#include "core/spec/ConfigJson.h"

#include "core/spec/ModelConfigFile.h"
#include "core/util/Files.h"

#include <stdexcept>

namespace parallax::configjson {

namespace {

// Configs nest three or four levels (rope_parameters inside text_config); deeper text is no config.
constexpr int kMostDepth = 16;

} // namespace

std::string shown(const Json& value) {
    if (value.is_object()) return "an object";
    if (value.is_array()) return "an array";
    std::string text = value.dump();
    return text.size() > 60 ? text.substr(0, 57) + "..." : text;
}

Json parseConfig(const std::string& folder, const std::string& path) {
    if (!isDirectory(folder))
        throw std::invalid_argument(folder + " is not a folder; model.from names a Hugging Face model folder "
                                             "(config.json and its *.safetensors)");
    if (!isRegularFile(path))
        throw std::invalid_argument(path + " is missing; model.from names a Hugging Face model folder "
                                           "(config.json and its *.safetensors)");
    const int64_t size = fileSize(path);
    if (size > kMaxModelConfigBytes)
        throw std::invalid_argument(path + " is " + std::to_string(size) + " bytes, too large for a model's config");
    std::string text;
    try {
        text = readFile(path);
    } catch (const FileError& e) {
        throw std::invalid_argument(path + ": cannot be read (" + e.what() + ")");
    }
    const auto limitDepth = [&](int depth, Json::parse_event_t, Json&) {
        if (depth > kMostDepth)
            throw std::invalid_argument(path + " nests deeper than " + std::to_string(kMostDepth) +
                                        " levels, which no model config does");
        return true;
    };
    Json json;
    try {
        json = Json::parse(text, limitDepth);
    } catch (const Json::exception& e) {
        throw std::invalid_argument(path + " is not valid JSON (" + e.what() + ")");
    }
    if (!json.is_object()) throw std::invalid_argument(path + " holds " + shown(json) + ", not a JSON object");
    return json;
}

} // namespace parallax::configjson
