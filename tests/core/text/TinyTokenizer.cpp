#include "tests/core/text/TinyTokenizer.h"

#include "core/text/ByteLevel.h"

namespace parallax::testing {

std::string byteLevel(const std::string& plain) {
    std::string out;
    for (const char c : plain)
        out += ByteLevel::instance().charFor(static_cast<uint8_t>(c));
    return out;
}

TinyTokenizer& TinyTokenizer::add(const std::string& content, bool special, nlohmann::json flags) {
    nlohmann::json t = {{"content", content},
                        {"single_word", false}, {"lstrip", false},   {"rstrip", false},
                        {"normalized", !special},  {"special", special}};
    for (const auto& [key, value] : flags.items())
        t[key] = value;
    added_tokens.push_back(t);
    return *this;
}

nlohmann::json TinyTokenizer::json() const {
    nlohmann::json vocab = nlohmann::json::object();
    for (int b = 0; b < 256; ++b)
        vocab[ByteLevel::instance().charFor(static_cast<uint8_t>(b))] = b;
    nlohmann::json mergeList = nlohmann::json::array();
    for (size_t i = 0; i < merges.size(); ++i) {
        const std::string a = byteLevel(merges[i].first), b = byteLevel(merges[i].second);
        if (!vocab.contains(a + b))
            vocab[a + b] = idOfMerge(i);
        if (stringMerges)
            mergeList.push_back(a + " " + b);
        else
            mergeList.push_back({a, b});
    }
    nlohmann::json added = added_tokens;
    for (size_t i = 0; i < added.size(); ++i)
        added[i]["id"] = idOfAdded(i);
    const nlohmann::json byteLevelStep = {
        {"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}};
    return {
        {"version", "1.0"},
        {"added_tokens", added},
        {"normalizer", {{"type", "NFC"}}},
        {"pre_tokenizer",
         {{"type", "Sequence"},
          {"pretokenizers",
           {{{"type", "Split"}, {"pattern", {{"Regex", kQwenPattern}}}, {"behavior", "Isolated"}, {"invert", false}},
            byteLevelStep}}}},
        {"post_processor", byteLevelStep},
        {"decoder", byteLevelStep},
        {"model",
         {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"continuing_subword_prefix", ""},
          {"end_of_word_suffix", ""}, {"fuse_unk", false}, {"byte_fallback", false}, {"ignore_merges", false},
          {"vocab", vocab}, {"merges", mergeList}}},
    };
}

} // namespace parallax::testing
