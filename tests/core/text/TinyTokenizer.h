#pragma once

#include "core/text/Tokenizer.h"

#include <nlohmann/json.hpp>

#include <string>
#include <utility>
#include <vector>

namespace parallax::testing {

// Qwen2's pre-tokenizer pattern, as its tokenizer.json writes it.
inline const char* kQwenPattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// `plain` in the byte-level alphabet: "a b" -> "aĠb".
std::string byteLevel(const std::string& plain);

// A small tokenizer.json shaped like Qwen's: NFC, Split(kQwenPattern) + ByteLevel, BPE whose
// vocabulary is the 256 byte characters (ids 0..255 in byte order) and then the result of each
// merge, in order. Merges are given in plain text ("a", "b"); `stringMerges` writes them as "a b".
struct TinyTokenizer {
    std::vector<std::pair<std::string, std::string>> merges;
    nlohmann::json added_tokens = nlohmann::json::array();
    bool stringMerges = false;

    // Appends an added token; the i-th has id idOfAdded(i), after the merges' tokens.
    TinyTokenizer& add(const std::string& content, bool special = true, nlohmann::json flags = nlohmann::json::object());
    int32_t idOfMerge(size_t index) const { return 256 + static_cast<int32_t>(index); }
    int32_t idOfAdded(size_t index) const { return idOfMerge(merges.size() + index); }
    nlohmann::json json() const;
    Tokenizer make() const { return Tokenizer::fromJson(json().dump(), "tiny/tokenizer.json"); }
};

} // namespace parallax::testing
