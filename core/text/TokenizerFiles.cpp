// Reads a Qwen2Tokenizer folder (vocab.json, merges.txt, tokenizer_config.json) into the tokenizer.json
// that transformers' conversion to the fast tokenizer gives.
#include "core/text/TokenizerFiles.h"

#include "core/text/TokenizerError.h"
#include "core/util/Files.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <unordered_set>
#include <vector>

namespace parallax {

const char* const kQwen2SplitPattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

namespace {

using Json = nlohmann::json;

constexpr int64_t kLargestFile = int64_t{1} << 30;

const char* kOrTokenizerJson = "a tokenizer.json in the folder would also do";

// The special-token fields of tokenizer_config.json and special_tokens_map.json.
const char* const kSpecialFields[] = {"bos_token", "eos_token", "unk_token", "sep_token", "pad_token",
                                      "cls_token", "mask_token", "additional_special_tokens"};

[[noreturn]] void fail(const std::string& file, const std::string& what) {
    throw TokenizerError(file + ": " + what);
}

std::string quoted(const std::string& s) { return "\"" + s + "\""; }

Json readJson(const std::string& file) {
    const std::string text = readTokenizerFile(file);
    try {
        return Json::parse(text);
    } catch (const Json::exception& e) {
        fail(file, std::string("is not JSON: ") + e.what());
    }
}

// tokenizer_config.json names the class; only Qwen2's is read.
void checkClass(const std::string& file, const Json& config) {
    if (!config.is_object())
        fail(file, std::string("must hold a JSON object, not ") + config.type_name());
    const auto it = config.find("tokenizer_class");
    const std::string read = it == config.end() ? std::string("missing")
                             : it->is_string()  ? it->get<std::string>()
                                                : it->dump();
    if (read != "Qwen2Tokenizer" && read != "Qwen2TokenizerFast")
        fail(file, "tokenizer_class is " + read + "; from vocab.json and merges.txt Parallax reads Qwen2Tokenizer "
                   "and Qwen2TokenizerFast only (" + kOrTokenizerJson + ")");
    const auto prefix = config.find("add_prefix_space");
    if (prefix != config.end() && !prefix->is_null() && *prefix != false)
        fail(file, "add_prefix_space is " + prefix->dump() + "; Qwen2Tokenizer adds no space (" + kOrTokenizerJson + ")");
}

// vocab.json: an object of token: integer id, taken as model.vocab.
Json readVocab(const std::string& file) {
    Json vocab = readJson(file);
    if (!vocab.is_object())
        fail(file, std::string("must be a JSON object of token: integer id, not ") + vocab.type_name());
    for (const auto& [token, id] : vocab.items()) {
        if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX)
            fail(file, quoted(token) + " has id " + id.dump() + "; vocab.json must be an object of token: integer id "
                       "(0 to 2147483647)");
    }
    return vocab;
}

bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

// The space-separated tokens of one line.
std::vector<std::string> wordsOf(const std::string& line) {
    std::vector<std::string> words;
    size_t i = 0;
    while (i < line.size()) {
        while (i < line.size() && isSpace(line[i]))
            ++i;
        const size_t start = i;
        while (i < line.size() && !isSpace(line[i]))
            ++i;
        if (i > start)
            words.push_back(line.substr(start, i - start));
    }
    return words;
}

// merges.txt: one merge a line, as Qwen2Tokenizer reads it; a merge repeated keeps its first rank,
// as the fast tokenizer's conversion keeps it.
Json readMerges(const std::string& file, const Json& vocab) {
    const std::string text = readTokenizerFile(file);
    Json merges = Json::array();
    std::unordered_set<std::string> seen;
    size_t start = 0;
    for (size_t lineNo = 1; start < text.size(); ++lineNo) {
        size_t end = text.find('\n', start);
        if (end == std::string::npos)
            end = text.size();
        const std::string line = text.substr(start, end - start);
        start = end + 1;
        const std::vector<std::string> words = wordsOf(line);
        if (words.empty() || (lineNo == 1 && words[0].rfind("#version", 0) == 0))
            continue;
        const std::string where = "line " + std::to_string(lineNo) + ": ";
        if (words.size() != 2)
            fail(file, where + quoted(line.substr(0, 200)) + " is not a merge, two tokens separated by a space");
        for (const std::string& w : {words[0], words[1], words[0] + words[1]}) {
            if (!vocab.contains(w))
                fail(file, where + "token " + quoted(w) + " is not in vocab.json");
        }
        if (seen.insert(words[0] + ' ' + words[1]).second)
            merges.push_back(Json::array({words[0], words[1]}));
    }
    return merges;
}

bool optionalFlag(const std::string& file, const Json& entry, const char* key, bool fallback, const std::string& path) {
    const auto it = entry.find(key);
    if (it == entry.end() || it->is_null())
        return fallback;
    if (!it->is_boolean())
        fail(file, path + "." + key + " must be true or false, not " + it->dump());
    return it->get<bool>();
}

Json addedToken(int64_t id, const std::string& content, bool special, bool normalized, bool lstrip, bool rstrip,
                bool singleWord) {
    return {{"id", id},         {"content", content}, {"single_word", singleWord}, {"lstrip", lstrip},
            {"rstrip", rstrip}, {"normalized", normalized}, {"special", special}};
}

// tokenizer_config.json's added_tokens_decoder: {"id": {"content": ..., flags}}.
Json addedTokensDecoder(const std::string& file, const Json& decoder) {
    if (!decoder.is_object())
        fail(file, std::string("added_tokens_decoder must be an object of id: token, not ") + decoder.type_name());
    Json out = Json::array();
    for (const auto& [key, entry] : decoder.items()) {
        const std::string path = "added_tokens_decoder[" + quoted(key) + "]";
        const bool digits = !key.empty() && key.size() <= 10 &&
                            std::all_of(key.begin(), key.end(), [](char c) { return c >= '0' && c <= '9'; });
        if (!digits || std::stoll(key) > INT32_MAX)
            fail(file, path + ": the key must be a token id (0 to 2147483647)");
        if (!entry.is_object() || !entry.contains("content") || !entry["content"].is_string() ||
            entry["content"].get<std::string>().empty())
            fail(file, path + " must be an object with a non-empty \"content\" string");
        const bool special = optionalFlag(file, entry, "special", false, path);
        out.push_back(addedToken(std::stoll(key), entry["content"].get<std::string>(), special,
                                 optionalFlag(file, entry, "normalized", !special, path),
                                 optionalFlag(file, entry, "lstrip", false, path),
                                 optionalFlag(file, entry, "rstrip", false, path),
                                 optionalFlag(file, entry, "single_word", false, path)));
    }
    return out;
}

// The contents of the special tokens a config names: a string, {"content": ...} or a list of them.
void namedTokens(const Json& value, std::vector<std::string>& out) {
    if (value.is_string())
        out.push_back(value.get<std::string>());
    else if (value.is_object() && value.contains("content") && value["content"].is_string())
        out.push_back(value["content"].get<std::string>());
    else if (value.is_array())
        for (const Json& v : value)
            namedTokens(v, out);
}

struct NamedToken {
    std::string content;
    std::string file;
    std::string field;
};

std::vector<NamedToken> specialTokensNamed(const std::string& file, const Json& config) {
    std::vector<NamedToken> out;
    if (!config.is_object())
        fail(file, std::string("must hold a JSON object, not ") + config.type_name());
    for (const char* field : kSpecialFields) {
        std::vector<std::string> contents;
        if (const auto it = config.find(field); it != config.end())
            namedTokens(*it, contents);
        for (std::string& c : contents)
            out.push_back({std::move(c), file, field});
    }
    return out;
}

// added_tokens.json: {content: id}, special when a config names it, as transformers loads that file.
Json addedTokensFile(const std::string& file, const std::vector<NamedToken>& named) {
    const Json tokens = readJson(file);
    if (!tokens.is_object())
        fail(file, std::string("must be a JSON object of token: integer id, not ") + tokens.type_name());
    std::unordered_set<std::string> special = {"<|endoftext|>"};
    for (const NamedToken& n : named)
        special.insert(n.content);
    Json out = Json::array();
    for (const auto& [content, id] : tokens.items()) {
        if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX)
            fail(file, quoted(content) + " has id " + id.dump() + "; added_tokens.json must be an object of token: "
                       "integer id (0 to 2147483647)");
        if (content.empty())
            fail(file, "holds an empty token");
        const bool isSpecial = special.count(content) > 0;
        out.push_back(addedToken(id.get<int64_t>(), content, isSpecial, !isSpecial, false, false, false));
    }
    return out;
}

// ByteLevel as Qwen2's conversion writes it: no prefix space, no regex of its own.
Json byteLevelStep() {
    return {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}};
}

Json preTokenizer() {
    const Json split = {{"type", "Split"},
                        {"pattern", {{"Regex", kQwen2SplitPattern}}},
                        {"behavior", "Isolated"},
                        {"invert", false}};
    return {{"type", "Sequence"}, {"pretokenizers", Json::array({split, byteLevelStep()})}};
}

// Every special token the configs name must be a token of the folder.
void checkNamed(const std::vector<NamedToken>& named, const Json& vocab, const Json& added) {
    std::unordered_set<std::string> contents;
    for (const Json& a : added)
        contents.insert(a["content"].get<std::string>());
    for (const NamedToken& n : named) {
        if (!contents.count(n.content) && !vocab.contains(n.content))
            fail(n.file, n.field + " " + quoted(n.content) + " is neither in vocab.json nor among the added tokens");
    }
}

} // namespace

std::string readTokenizerFile(const std::string& file) {
    const int64_t size = fileSize(file);
    if (size < 0)
        throw TokenizerError(file + " cannot be read: " + (pathExists(file) ? "permission denied?" : "no such file"));
    if (size > kLargestFile)
        throw TokenizerError(file + " is " + std::to_string(size) +
                             " bytes; a tokenizer file of more than 1 GiB is not read");
    try {
        return readFile(file);
    } catch (const FileError& e) {
        throw TokenizerError(file + " cannot be read: " + e.what());
    }
}

bool hasTokenizerFiles(const std::string& folder) {
    for (const char* name : {"vocab.json", "merges.txt", "tokenizer_config.json"})
        if (pathExists(joinPath(folder, name)))
            return true;
    return false;
}

std::string qwen2TokenizerJson(const std::string& folder) {
    const std::string vocabFile = joinPath(folder, "vocab.json"), mergesFile = joinPath(folder, "merges.txt");
    const std::string configFile = joinPath(folder, "tokenizer_config.json");
    const bool hasVocab = pathExists(vocabFile), hasMerges = pathExists(mergesFile);
    if (!hasVocab || !hasMerges) {
        const std::string has = hasVocab    ? "vocab.json but no merges.txt"
                                : hasMerges ? "merges.txt but no vocab.json"
                                            : "neither vocab.json nor merges.txt";
        throw TokenizerError(folder + " has no tokenizer.json, and " + has + ": a Qwen2Tokenizer folder needs both (" +
                             kOrTokenizerJson + ")");
    }
    if (!pathExists(configFile))
        throw TokenizerError(folder + " has no tokenizer.json, and no tokenizer_config.json to name the class of its "
                             "vocab.json and merges.txt (Qwen2Tokenizer is read; " + kOrTokenizerJson + ")");
    const Json config = readJson(configFile);
    checkClass(configFile, config);
    std::vector<NamedToken> named = specialTokensNamed(configFile, config);
    const std::string mapFile = joinPath(folder, "special_tokens_map.json");
    if (pathExists(mapFile))
        for (NamedToken& n : specialTokensNamed(mapFile, readJson(mapFile)))
            named.push_back(std::move(n));

    Json model = {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"continuing_subword_prefix", ""},
                  {"end_of_word_suffix", ""}, {"fuse_unk", false}, {"byte_fallback", false}, {"ignore_merges", false}};
    model["vocab"] = readVocab(vocabFile);
    model["merges"] = readMerges(mergesFile, model["vocab"]);

    Json added = Json::array();
    const std::string addedFile = joinPath(folder, "added_tokens.json");
    if (const auto it = config.find("added_tokens_decoder"); it != config.end() && !it->is_null())
        added = addedTokensDecoder(configFile, *it);
    else if (pathExists(addedFile))
        added = addedTokensFile(addedFile, named);
    std::stable_sort(added.begin(), added.end(), [](const Json& a, const Json& b) { return a["id"] < b["id"]; });
    checkNamed(named, model["vocab"], added);

    Json tokenizer = {{"version", "1.0"},        {"truncation", nullptr},   {"padding", nullptr},
                      {"normalizer", {{"type", "NFC"}}}, {"pre_tokenizer", preTokenizer()},
                      {"post_processor", byteLevelStep()}, {"decoder", byteLevelStep()}};
    tokenizer["added_tokens"] = std::move(added);
    tokenizer["model"] = std::move(model);
    return tokenizer.dump();
}

} // namespace parallax
