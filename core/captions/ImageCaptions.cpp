#include "core/captions/ImageCaptions.h"

#include "core/util/Files.h"

#ifdef PARALLAX_WITH_CONVERSATIONS
#include "core/conversations/ConversationFile.h"
#endif

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <sstream>

namespace parallax {

namespace {

using Json = nlohmann::json;

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
}

std::string extensionOf(const std::string& path) { return lower(std::filesystem::path(path).extension().string()); }

bool isImageName(const std::string& path) {
    const std::string e = extensionOf(path);
    return e == ".jpg" || e == ".jpeg" || e == ".png" || e == ".webp";
}

std::string resolve(const std::string& folder, const std::string& path) {
    return std::filesystem::path(path).is_absolute() ? path : joinPath(folder, path);
}

std::string trimmed(const std::string& s) {
    const size_t a = s.find_first_not_of(" \t\r\n"), b = s.find_last_not_of(" \t\r\n");
    return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
}

void requireImage(const CaptionSample& s, const std::string& field) {
    if (!isRegularFile(s.image))
        throw CaptionError(s.source + ": " + field + " " + s.image + " is not a file");
}

// A UTF-8 byte order mark some spreadsheet programs write first.
size_t bomLength(const std::string& text) { return text.rfind("\xEF\xBB\xBF", 0) == 0 ? 3 : 0; }

// RFC 4180: fields separated by commas, rows by line breaks; a quoted field may hold commas, line
// breaks and doubled quotes. Each row comes with the line it starts on.
std::vector<std::pair<size_t, std::vector<std::string>>> csvRows(const std::string& text, const std::string& file) {
    std::vector<std::pair<size_t, std::vector<std::string>>> rows;
    std::vector<std::string> row;
    std::string field;
    bool quoted = false, any = false;
    size_t line = 1, rowLine = 1;
    const auto endRow = [&] {
        if (any || !field.empty() || !row.empty()) {
            row.push_back(field);
            rows.emplace_back(rowLine, row);
        }
        row.clear();
        field.clear();
        any = false;
    };
    for (size_t i = bomLength(text); i < text.size(); ++i) {
        const char c = text[i];
        if (quoted) {
            if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') field += '"', ++i;
            else if (c == '"') quoted = false;
            else {
                if (c == '\n') ++line;
                field += c;
            }
        } else if (c == '"') {
            quoted = any = true;
        } else if (c == ',') {
            row.push_back(field);
            field.clear();
            any = true;
        } else if (c == '\n' || c == '\r') {
            if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
            endRow();
            rowLine = ++line;
        } else {
            field += c;
        }
    }
    if (quoted) throw CaptionError(file + ":" + std::to_string(rowLine) + ": a quoted field is not closed");
    endRow();
    return rows;
}

std::vector<CaptionSample> readCsv(const std::string& file) {
    const std::string folder = parentPath(file);
    const auto rows = csvRows(readFile(file), file);
    if (rows.empty()) throw CaptionError(file + ": empty; expected a header row naming image and prompt");
    std::map<std::string, size_t> column;
    for (size_t i = 0; i < rows[0].second.size(); ++i) column[lower(trimmed(rows[0].second[i]))] = i;
    for (const char* needed : {"image", "prompt"})
        if (!column.count(needed))
            throw CaptionError(file + ":1: the header has no " + needed + " column (DiffSynth's metadata.csv: image,prompt)");
    std::vector<CaptionSample> out;
    for (size_t r = 1; r < rows.size(); ++r) {
        const auto& [line, fields] = rows[r];
        const auto cell = [&](const std::string& name) {
            const auto it = column.find(name);
            return it != column.end() && it->second < fields.size() ? fields[it->second] : std::string();
        };
        CaptionSample s;
        s.source = file + ":" + std::to_string(line);
        if (trimmed(cell("image")).empty()) throw CaptionError(s.source + ": the image field is empty");
        s.image = resolve(folder, trimmed(cell("image")));
        s.prompt = cell("prompt");
        if (!trimmed(cell("edit_image")).empty()) s.edit_images.push_back(resolve(folder, trimmed(cell("edit_image"))));
        out.push_back(std::move(s));
    }
    return out;
}

CaptionSample fromJson(const Json& j, const std::string& folder, const std::string& source) {
    if (!j.is_object()) throw CaptionError(source + ": a sample is an object with \"image\" and \"prompt\"");
    CaptionSample s;
    s.source = source;
    if (!j.contains("image") || !j["image"].is_string() || j["image"].get<std::string>().empty())
        throw CaptionError(source + ": \"image\" is missing or not a path");
    if (!j.contains("prompt") || !j["prompt"].is_string())
        throw CaptionError(source + ": \"prompt\" is missing or not text");
    s.image = resolve(folder, j["image"].get<std::string>());
    s.prompt = j["prompt"].get<std::string>();
    if (j.contains("edit_image")) {
        const Json& e = j["edit_image"];
        if (e.is_string()) s.edit_images.push_back(resolve(folder, e.get<std::string>()));
        else if (e.is_array())
            for (const Json& p : e) {
                if (!p.is_string()) throw CaptionError(source + ": \"edit_image\" holds something other than a path");
                s.edit_images.push_back(resolve(folder, p.get<std::string>()));
            }
        else if (!e.is_null()) throw CaptionError(source + ": \"edit_image\" is a path or a list of paths");
    }
    return s;
}

// Parsed samples of a JSON array or JSONL file, each with where it is.
std::vector<std::pair<std::string, Json>> jsonSamples(const std::string& file) {
    const std::string text = readFile(file);
    std::vector<std::pair<std::string, Json>> out;
    if (extensionOf(file) == ".jsonl") {
        std::istringstream in(text);
        std::string line;
        for (size_t n = 1; std::getline(in, line); ++n) {
            if (trimmed(line).empty()) continue;
            const std::string where = file + ":" + std::to_string(n);
            try {
                out.emplace_back(where, Json::parse(line));
            } catch (const Json::parse_error& e) {
                throw CaptionError(where + ": not JSON (" + e.what() + ")");
            }
        }
        return out;
    }
    Json all;
    try {
        all = Json::parse(text);
    } catch (const Json::parse_error& e) {
        throw CaptionError(file + ": not JSON (" + e.what() + ")");
    }
    if (!all.is_array()) throw CaptionError(file + ": expected an array of samples");
    for (size_t i = 0; i < all.size(); ++i) out.emplace_back(file + ": sample " + std::to_string(i + 1), all[i]);
    return out;
}

std::vector<CaptionSample> fromConversations(const std::string& file) {
#ifdef PARALLAX_WITH_CONVERSATIONS
    std::vector<CaptionSample> out;
    try {
        for (const Conversation& c : readConversations(file)) {
            CaptionSample s;
            s.source = c.source;
            for (const ConversationMessage& m : c.messages)
                for (const ConversationPart& p : m.parts) {
                    if (p.image) {
                        if (!s.image.empty())
                            throw CaptionError(c.source + ": an image-caption pair has one image; this sample has more");
                        s.image = p.path;
                    } else if (m.role == "assistant" && s.prompt.empty()) {
                        s.prompt = trimmed(p.text);
                    }
                }
            if (s.image.empty()) throw CaptionError(c.source + ": no image (an image-caption pair has one)");
            if (s.prompt.empty()) throw CaptionError(c.source + ": no answer to take as the caption");
            out.push_back(std::move(s));
        }
    } catch (const ConversationError& e) {
        throw CaptionError(e.what());
    }
    return out;
#else
    throw CaptionError(file + ": conversation files need the tokenizer and image decoders, not built here");
#endif
}

std::vector<CaptionSample> readJson(const std::string& file) {
    const auto samples = jsonSamples(file);
    if (!samples.empty() && samples.front().second.is_object() && !samples.front().second.contains("prompt"))
        return fromConversations(file);
    std::vector<CaptionSample> out;
    for (const auto& [where, j] : samples) out.push_back(fromJson(j, parentPath(file), where));
    return out;
}

std::vector<CaptionSample> readImageFolder(const std::string& folder) {
    std::vector<std::string> names = listDirectory(folder);
    std::sort(names.begin(), names.end());
    std::vector<CaptionSample> out;
    std::vector<std::string> uncaptioned;
    for (const std::string& name : names) {
        const std::string path = joinPath(folder, name);
        if (!isImageName(name) || !isRegularFile(path)) continue;
        const std::string caption = std::filesystem::path(path).replace_extension(".txt").string();
        if (!isRegularFile(caption)) {
            uncaptioned.push_back(name);
            continue;
        }
        out.push_back({path, trimmed(readFile(caption)), {}, caption});
    }
    if (!uncaptioned.empty()) {
        std::string list;
        for (size_t i = 0; i < uncaptioned.size() && i < 5; ++i) list += (i ? ", " : "") + uncaptioned[i];
        if (uncaptioned.size() > 5) list += " and " + std::to_string(uncaptioned.size() - 5) + " more";
        throw CaptionError(folder + ": " + std::to_string(uncaptioned.size()) + " images have no caption (" + list +
                           "): write a same-name .txt beside each, or list the pairs in metadata.csv");
    }
    if (out.empty())
        throw CaptionError(folder + ": no images with captions (a.jpg with a.txt) and no metadata.csv, .json or .jsonl");
    return out;
}

} // namespace

std::vector<CaptionSample> readImageCaptions(const std::string& path) {
    std::vector<CaptionSample> samples;
    if (isDirectory(path)) {
        for (const char* name : {"metadata.csv", "metadata.json", "metadata.jsonl"})
            if (isRegularFile(joinPath(path, name))) return readImageCaptions(joinPath(path, name));
        samples = readImageFolder(path);
    } else if (!isRegularFile(path)) {
        throw CaptionError(path + ": no such file or folder (data.path: a folder of images with .txt captions, or "
                                  "metadata.csv, .json or .jsonl)");
    } else if (extensionOf(path) == ".csv") {
        samples = readCsv(path);
    } else if (extensionOf(path) == ".json" || extensionOf(path) == ".jsonl") {
        samples = readJson(path);
    } else {
        throw CaptionError(path + ": not a .csv, .json or .jsonl file, nor a folder");
    }
    for (const CaptionSample& s : samples) {
        requireImage(s, "image");
        for (const std::string& e : s.edit_images)
            if (!isRegularFile(e)) throw CaptionError(s.source + ": edit_image " + e + " is not a file");
    }
    if (samples.empty()) throw CaptionError(path + ": no samples");
    return samples;
}

} // namespace parallax
