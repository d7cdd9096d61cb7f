// Reads a Hugging Face tokenizer.json into the parts of a Tokenizer, refusing what it cannot run.
#include "core/text/ByteLevel.h"
#include "core/text/TokenizerError.h"
#include "core/text/TokenizerImpl.h"
#include "core/text/TokenizerJsonStream.h"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace parallax {

namespace {

using Json = nlohmann::json;

const char* kSupported =
    "Parallax reads byte-level BPE tokenizers (GPT-2, Llama 3, Qwen): model BPE, pre_tokenizer ByteLevel "
    "(alone or after Split patterns), decoder ByteLevel, normalizer none, NFC, NFD, NFKC, NFKD or a "
    "Sequence of them";

// The expression of the GPT-2 ByteLevel pre-tokenizer with use_regex.
const char* kByteLevelPattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// Limits against a file that claims more than it holds: ids beyond twice the tokens it lists.
constexpr int64_t kIdSlack = 1024;

class Reader {
public:
    Reader(std::string source, TokenizerJsonStream& stream) : m_source(std::move(source)), m_stream(stream) {}

    [[noreturn]] void fail(const std::string& what) const { throw TokenizerError(m_source + ": " + what); }
    [[noreturn]] void refuse(const std::string& what) const {
        throw TokenizerError(m_source + ": " + what + ". " + kSupported + ".");
    }

    const Json& member(const Json& object, const char* key, const std::string& path) const {
        const auto it = object.find(key);
        if (it == object.end())
            fail((path.empty() ? std::string() : path + ".") + key + " is missing");
        return *it;
    }
    std::string string(const Json& value, const std::string& path) const {
        if (!value.is_string())
            fail(path + " must be a string, not " + std::string(value.type_name()));
        return value.get<std::string>();
    }
    bool flag(const Json& object, const char* key, bool fallback, const std::string& path) const {
        const auto it = object.find(key);
        if (it == object.end() || it->is_null())
            return fallback;
        if (!it->is_boolean())
            fail(path + "." + key + " must be true or false, not " + std::string(it->type_name()));
        return it->get<bool>();
    }
    std::string typeOf(const Json& object, const std::string& path) const {
        if (!object.is_object())
            fail(path + " must be an object, not " + std::string(object.type_name()));
        return string(member(object, "type", path), path + ".type");
    }

    UnicodeNormalizer normalizer(const Json& n) const;
    void preTokenizer(const Json& p, Tokenizer::Impl& t) const;
    void decoder(const Json& d) const;
    std::unique_ptr<BpeModel> model(const Json& m) const;
    std::vector<AddedToken> addedTokens(const Json& a) const;

private:
    void byteLevel(const Json& step, const std::string& path, Tokenizer::Impl& t) const;
    SplitPattern split(const Json& step, const std::string& path) const;
    std::unordered_map<std::string, int32_t> vocab(const Json& m) const;
    std::vector<std::pair<std::string, std::string>> merges(const Json& m) const;

    std::string m_source;
    TokenizerJsonStream& m_stream; // model.vocab and model.merges, read apart from the tree
};

UnicodeNormalizer Reader::normalizer(const Json& n) const {
    if (n.is_null())
        return UnicodeNormalizer();
    std::vector<UnicodeNormalizer::Form> forms;
    const auto add = [&](const Json& step, const std::string& path) {
        const std::string type = typeOf(step, path);
        UnicodeNormalizer::Form form;
        if (!UnicodeNormalizer::formNamed(type, form))
            refuse(path + " is " + type);
        forms.push_back(form);
    };
    if (typeOf(n, "normalizer") == "Sequence") {
        const Json& steps = member(n, "normalizers", "normalizer");
        if (!steps.is_array())
            fail("normalizer.normalizers must be an array");
        for (size_t i = 0; i < steps.size(); ++i)
            add(steps[i], "normalizer.normalizers[" + std::to_string(i) + "]");
    } else {
        add(n, "normalizer");
    }
    return UnicodeNormalizer(std::move(forms));
}

SplitPattern Reader::split(const Json& step, const std::string& path) const {
    const Json& pattern = member(step, "pattern", path);
    const std::string behaviorName = string(member(step, "behavior", path), path + ".behavior");
    SplitPattern::Behavior behavior;
    if (!SplitPattern::behaviorNamed(behaviorName, behavior))
        fail(path + ".behavior " + behaviorName + " is not one of Removed, Isolated, MergedWithPrevious, "
             "MergedWithNext, Contiguous");
    const bool invert = flag(step, "invert", false, path);
    try {
        if (pattern.is_object() && pattern.contains("Regex"))
            return SplitPattern::regex(string(pattern["Regex"], path + ".pattern.Regex"), behavior, invert);
        if (pattern.is_object() && pattern.contains("String"))
            return SplitPattern::literal(string(pattern["String"], path + ".pattern.String"), behavior, invert);
    } catch (const TokenizerError& e) {
        fail(path + ".pattern: " + e.what());
    }
    fail(path + ".pattern must be {\"Regex\": ...} or {\"String\": ...}");
}

void Reader::byteLevel(const Json& step, const std::string& path, Tokenizer::Impl& t) const {
    t.prefixSpace = flag(step, "add_prefix_space", true, path);
    if (flag(step, "use_regex", true, path))
        t.byteLevelRegex = std::make_unique<SplitPattern>(
            SplitPattern::regex(kByteLevelPattern, SplitPattern::Behavior::Isolated, false));
}

void Reader::preTokenizer(const Json& p, Tokenizer::Impl& t) const {
    if (p.is_null())
        refuse("pre_tokenizer is null: without ByteLevel this is not a byte-level tokenizer");
    const std::string type = typeOf(p, "pre_tokenizer");
    if (type == "ByteLevel")
        return byteLevel(p, "pre_tokenizer", t);
    if (type != "Sequence")
        refuse("pre_tokenizer is " + type + (type == "Metaspace" ? " (a sentencepiece-style tokenizer)" : ""));
    const Json& steps = member(p, "pretokenizers", "pre_tokenizer");
    if (!steps.is_array() || steps.empty())
        fail("pre_tokenizer.pretokenizers must be a non-empty array");
    for (size_t i = 0; i < steps.size(); ++i) {
        const std::string path = "pre_tokenizer.pretokenizers[" + std::to_string(i) + "]";
        const std::string stepType = typeOf(steps[i], path);
        if (stepType == "Split" && i + 1 < steps.size()) {
            t.splits.push_back(split(steps[i], path));
        } else if (stepType == "ByteLevel" && i + 1 == steps.size()) {
            byteLevel(steps[i], path, t);
        } else if (stepType == "Split" || stepType == "ByteLevel") {
            refuse(path + " is " + stepType + ", but ByteLevel must come last and only once");
        } else {
            refuse(path + " is " + stepType + (stepType == "Metaspace" ? " (a sentencepiece-style tokenizer)" : ""));
        }
    }
}

void Reader::decoder(const Json& d) const {
    if (d.is_null())
        refuse("decoder is null");
    const std::string type = typeOf(d, "decoder");
    if (type != "ByteLevel")
        refuse("decoder is " + type);
}

std::unordered_map<std::string, int32_t> Reader::vocab(const Json& m) const {
    if (!m_stream.hasVocab)
        fail(m.contains("vocab") ? "model.vocab must be an object of token: id" : "model.vocab is missing");
    std::unordered_map<std::string, int32_t> vocab;
    vocab.reserve(m_stream.vocab.size());
    const int64_t limit = 2 * static_cast<int64_t>(m_stream.vocab.size()) + kIdSlack;
    for (auto& [token, id] : m_stream.vocab) {
        if (id < 0 || id >= limit)
            fail("model.vocab[\"" + token + "\"] must be an id from 0 to " + std::to_string(limit - 1) + ", not " +
                 std::to_string(id));
        vocab.insert_or_assign(std::move(token), static_cast<int32_t>(id)); // a repeated token: the last, as JSON
    }
    m_stream.vocab.clear();
    return vocab;
}

std::vector<std::pair<std::string, std::string>> Reader::merges(const Json& m) const {
    if (!m_stream.hasMerges)
        fail(m.contains("merges") ? "model.merges must be an array" : "model.merges is missing");
    return std::move(m_stream.merges);
}

std::unique_ptr<BpeModel> Reader::model(const Json& m) const {
    if (!m.is_object())
        fail("model must be an object");
    const auto typeIt = m.find("type");
    // Files written before the field existed name no type; merges make it BPE, as the Rust tokenizers infer.
    const std::string type = typeIt != m.end() ? string(*typeIt, "model.type") : m_stream.hasMerges ? "BPE" : "";
    if (type != "BPE")
        refuse("model.type is " + (type.empty() ? std::string("missing") : type) +
               (type == "Unigram" ? " (a sentencepiece model)" : ""));
    std::unordered_map<std::string, int32_t> vocab = this->vocab(m);
    BpeOptions options;
    const auto text = [&](const char* key) -> std::string {
        const auto it = m.find(key);
        return it == m.end() || it->is_null() ? std::string() : string(*it, std::string("model.") + key);
    };
    if (const auto it = m.find("dropout"); it != m.end() && !it->is_null()) {
        if (!it->is_number() || it->get<double>() != 0.0)
            refuse("model.dropout is " + it->dump() + ": BPE dropout (random merges) is not run; set it to null");
    }
    if (const std::string unk = text("unk_token"); !unk.empty())
        options.unk_token = unk;
    options.continuing_subword_prefix = text("continuing_subword_prefix");
    options.end_of_word_suffix = text("end_of_word_suffix");
    options.fuse_unk = flag(m, "fuse_unk", false, "model");
    options.byte_fallback = flag(m, "byte_fallback", false, "model");
    options.ignore_merges = flag(m, "ignore_merges", false, "model");
    try {
        return std::make_unique<BpeModel>(std::move(vocab), merges(m), std::move(options));
    } catch (const TokenizerError& e) {
        fail(e.what()); // the model's messages name the field; this adds the file
    }
}

std::vector<AddedToken> Reader::addedTokens(const Json& a) const {
    std::vector<AddedToken> out;
    if (a.is_null())
        return out;
    if (!a.is_array())
        fail("added_tokens must be an array");
    for (size_t i = 0; i < a.size(); ++i) {
        const std::string path = "added_tokens[" + std::to_string(i) + "]";
        const Json& e = a[i];
        if (!e.is_object())
            fail(path + " must be an object");
        const Json& id = member(e, "id", path);
        if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX)
            fail(path + ".id must be a non-negative integer, not " + id.dump());
        AddedToken t;
        t.id = static_cast<int32_t>(id.get<int64_t>());
        t.content = string(member(e, "content", path), path + ".content");
        if (t.content.empty())
            fail(path + ".content is empty");
        t.special = flag(e, "special", false, path);
        t.single_word = flag(e, "single_word", false, path);
        t.lstrip = flag(e, "lstrip", false, path);
        t.rstrip = flag(e, "rstrip", false, path);
        t.normalized = flag(e, "normalized", !t.special, path);
        out.push_back(std::move(t));
    }
    return out;
}

// Every id's bytes for decode: a vocabulary string through the byte-level alphabet (its own bytes
// where a character is outside it, as the Rust decoder does), an added token's content as it is.
void buildDecodeTable(Tokenizer::Impl& t, const Reader& reader) {
    int64_t count = 0;
    for (const auto& [token, id] : t.model->vocab())
        count = std::max<int64_t>(count, id + 1);
    const int64_t limit = 2 * (static_cast<int64_t>(t.model->vocab().size()) + static_cast<int64_t>(t.added.size())) + kIdSlack;
    for (const AddedToken& a : t.added) {
        if (a.id >= limit)
            reader.fail("added token \"" + a.content + "\" has id " + std::to_string(a.id) + ", beyond the " +
                        std::to_string(limit) + " ids the file could hold");
        count = std::max<int64_t>(count, a.id + 1);
    }
    std::vector<std::string> bytes(static_cast<size_t>(count));
    t.idFlags.assign(static_cast<size_t>(count), 0);
    for (const auto& [token, id] : t.model->vocab()) {
        std::string& b = bytes[static_cast<size_t>(id)];
        b.clear();
        if (!ByteLevel::instance().decode(token, b))
            b = token;
        t.idFlags[static_cast<size_t>(id)] = Tokenizer::Impl::Present;
    }
    for (const AddedToken& a : t.added) {
        bytes[static_cast<size_t>(a.id)] = a.content;
        t.idFlags[static_cast<size_t>(a.id)] =
            Tokenizer::Impl::Present | (a.special ? Tokenizer::Impl::Special : 0);
        t.addedIds.emplace(a.content, a.id);
    }
    t.decodedEnd.resize(bytes.size());
    for (size_t i = 0; i < bytes.size(); ++i) {
        t.decoded += bytes[i];
        t.decodedEnd[i] = static_cast<uint32_t>(t.decoded.size());
    }
}

} // namespace

std::shared_ptr<Tokenizer::Impl> readTokenizerJson(const std::string& jsonText, const std::string& source) {
    TokenizerJsonStream stream;
    const Reader reader(source, stream);
    if (!stream.parse(jsonText))
        reader.fail(stream.error);
    const Json& json = stream.tree;
    if (!json.is_object())
        reader.fail(std::string("must hold a JSON object, not ") + json.type_name());
    auto t = std::make_shared<Tokenizer::Impl>();
    t->source = source;
    try {
        const auto field = [&](const char* key) -> const Json& {
            static const Json null;
            const auto it = json.find(key);
            return it == json.end() ? null : *it;
        };
        t->model = reader.model(reader.member(json, "model", ""));
        reader.preTokenizer(field("pre_tokenizer"), *t);
        reader.decoder(field("decoder"));
        t->normalizer = reader.normalizer(field("normalizer"));
        t->added = reader.addedTokens(field("added_tokens"));
    } catch (const Json::exception& e) {
        reader.fail(std::string("unexpected JSON: ") + e.what());
    }
    t->rawMatcher = AddedTokenMatcher(t->added, false, t->normalizer);
    t->normalizedMatcher = AddedTokenMatcher(t->added, true, t->normalizer);
    buildDecodeTable(*t, reader);
    return t;
}

} // namespace parallax
