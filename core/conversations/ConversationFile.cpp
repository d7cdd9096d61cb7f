#include "core/conversations/ConversationFile.h"

#include "core/util/Files.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace parallax {

namespace {

using nlohmann::json;

constexpr const char* kImageMark = "<image>";

[[noreturn]] void fail(const std::string& where, const std::string& what) { throw ConversationError(where + ": " + what); }

std::string role(const std::string& given) {
    if (given == "human") return "user";
    if (given == "gpt") return "assistant";
    return given;
}

std::string imagePath(const std::string& given, const std::string& folder, const std::string& where) {
    std::string path = given;
    if (path.rfind("file://", 0) == 0) path = path.substr(7);
    if (path.rfind("http://", 0) == 0 || path.rfind("https://", 0) == 0 || path.rfind("data:", 0) == 0)
        fail(where, "image \"" + given.substr(0, 80) + "\" is a URL; Parallax reads image files (download it "
                    "and name the file)");
    if (path.empty()) fail(where, "an image path is empty");
    return std::filesystem::path(path).is_absolute() ? path : joinPath(folder, path);
}

std::string stringField(const json& object, const char* key, const std::string& where) {
    const auto it = object.find(key);
    if (it == object.end() || !it->is_string()) fail(where, std::string("\"") + key + "\" must be a string");
    return it->get<std::string>();
}

// Text with "<image>" marks: text parts and, for each mark, the sample's next image.
void addText(ConversationMessage& m, const std::string& text, std::vector<std::string>& images, size_t& used,
             const std::string& where) {
    size_t at = 0;
    while (true) {
        const size_t mark = text.find(kImageMark, at);
        const std::string piece = text.substr(at, mark == std::string::npos ? std::string::npos : mark - at);
        if (!piece.empty()) m.parts.push_back({false, piece, {}});
        if (mark == std::string::npos) break;
        if (used >= images.size())
            fail(where, "the text has more \"<image>\" marks than the sample's " + std::to_string(images.size()) +
                            " images");
        m.parts.push_back({true, {}, images[used++]});
        at = mark + std::string(kImageMark).size();
    }
}

void addBlocks(ConversationMessage& m, const json& blocks, const std::string& folder, const std::string& where) {
    for (const json& block : blocks) {
        if (!block.is_object()) fail(where, "a content block must be an object");
        const std::string type = stringField(block, "type", where);
        if (type == "text") {
            m.parts.push_back({false, stringField(block, "text", where), {}});
        } else if (type == "image") {
            m.parts.push_back({true, {}, imagePath(stringField(block, "image", where), folder, where)});
        } else if (type == "image_url") {
            const auto url = block.find("image_url");
            const std::string given = url != block.end() && url->is_object() ? stringField(*url, "url", where)
                                      : url != block.end() && url->is_string() ? url->get<std::string>()
                                                                               : std::string();
            if (given.empty()) fail(where, "an image_url block needs {\"image_url\": {\"url\": PATH}}");
            m.parts.push_back({true, {}, imagePath(given, folder, where)});
        } else {
            fail(where, "content block type \"" + type + "\" is not read (text, image, image_url are)");
        }
    }
}

std::vector<std::string> listedImages(const json& sample, const std::string& folder, const std::string& where) {
    std::vector<std::string> out;
    for (const char* key : {"image", "images"}) {
        const auto it = sample.find(key);
        if (it == sample.end() || it->is_null()) continue;
        if (it->is_string()) out.push_back(imagePath(it->get<std::string>(), folder, where));
        else if (it->is_array())
            for (const json& p : *it) {
                if (!p.is_string()) fail(where, std::string("\"") + key + "\" must list image paths (strings)");
                out.push_back(imagePath(p.get<std::string>(), folder, where));
            }
        else fail(where, std::string("\"") + key + "\" must be an image path or a list of them");
    }
    return out;
}

Conversation parseSample(const json& sample, const std::string& folder, const std::string& where) {
    if (!sample.is_object()) fail(where, "a sample must be a JSON object");
    std::vector<std::string> images = listedImages(sample, folder, where);
    const bool messages = sample.contains("messages");
    const auto turns = sample.find(messages ? "messages" : "conversations");
    if (turns == sample.end() || !turns->is_array() || turns->empty())
        fail(where, "a sample needs \"messages\" (role/content) or \"conversations\" (from/value): a non-empty list");
    Conversation c;
    c.source = where;
    size_t used = 0;
    for (const json& turn : *turns) {
        if (!turn.is_object()) fail(where, "each message must be a JSON object");
        ConversationMessage m;
        const bool fromValue = turn.contains("from");
        m.role = role(stringField(turn, fromValue ? "from" : "role", where));
        const auto content = turn.find(fromValue ? "value" : "content");
        if (content == turn.end()) fail(where, std::string("a message has no \"") + (fromValue ? "value" : "content") + "\"");
        if (content->is_string()) addText(m, content->get<std::string>(), images, used, where);
        else if (content->is_array()) addBlocks(m, *content, folder, where);
        else fail(where, "a message's content must be text or a list of content blocks");
        c.messages.push_back(std::move(m));
    }
    if (used < images.size()) { // images listed but not placed: before the first user message's text
        auto first = std::find_if(c.messages.begin(), c.messages.end(), [](const auto& m) { return m.role == "user"; });
        if (first == c.messages.end()) fail(where, "the sample lists images but has no user message to place them in");
        std::vector<ConversationPart> placed;
        for (size_t i = used; i < images.size(); ++i) placed.push_back({true, {}, images[i]});
        first->parts.insert(first->parts.begin(), placed.begin(), placed.end());
    }
    return c;
}

std::string readAll(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw ConversationError(path + ": cannot be read");
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

void readFile(const std::string& path, std::vector<Conversation>& out) {
    std::string folder = std::filesystem::path(path).parent_path().string();
    if (folder.empty()) folder = ".";
    const std::string text = readAll(path);
    if (path.size() >= 6 && path.compare(path.size() - 6, 6, ".jsonl") == 0) {
        std::istringstream lines(text);
        std::string line;
        for (size_t number = 1; std::getline(lines, line); ++number) {
            if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
            const std::string where = path + ":" + std::to_string(number);
            json sample;
            try {
                sample = json::parse(line);
            } catch (const json::parse_error& e) {
                fail(where, std::string("not JSON: ") + e.what());
            }
            out.push_back(parseSample(sample, folder, where));
        }
        return;
    }
    json doc;
    try {
        doc = json::parse(text);
    } catch (const json::parse_error& e) {
        fail(path, std::string("not JSON (a .json file holds a list of samples; one sample a line is .jsonl): ") +
                       e.what());
    }
    if (!doc.is_array()) fail(path, "a .json file of conversations holds a list of samples");
    for (size_t i = 0; i < doc.size(); ++i) out.push_back(parseSample(doc[i], folder, path + ": sample " + std::to_string(i)));
}

} // namespace

size_t Conversation::imageCount() const {
    size_t n = 0;
    for (const ConversationMessage& m : messages)
        for (const ConversationPart& p : m.parts) n += p.image ? 1 : 0;
    return n;
}

std::vector<Conversation> readConversations(const std::string& fileOrFolder) {
    std::vector<Conversation> out;
    if (!isDirectory(fileOrFolder)) {
        if (!isRegularFile(fileOrFolder)) throw ConversationError(fileOrFolder + ": no such file or folder");
        readFile(fileOrFolder, out);
        return out;
    }
    std::vector<std::string> files;
    for (const auto& entry : std::filesystem::directory_iterator(fileOrFolder)) {
        const std::string ext = entry.path().extension().string();
        if (entry.is_regular_file() && (ext == ".json" || ext == ".jsonl")) files.push_back(entry.path().string());
    }
    std::sort(files.begin(), files.end());
    if (files.empty()) throw ConversationError(fileOrFolder + ": the folder holds no .json or .jsonl file");
    for (const std::string& f : files) readFile(f, out);
    return out;
}

} // namespace parallax
