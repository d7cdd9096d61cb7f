#pragma once

// The parts of a Tokenizer, shared by the tokenizer.json reader (TokenizerJson.cpp) and the
// encoder (Tokenizer.cpp). Not for other code.

#include "core/text/AddedVocabulary.h"
#include "core/text/BpeModel.h"
#include "core/text/SplitPattern.h"
#include "core/text/Tokenizer.h"
#include "core/text/UnicodeNormalizer.h"

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace parallax {

struct Tokenizer::Impl {
    std::string source;
    UnicodeNormalizer normalizer;
    std::vector<SplitPattern> splits;              // the Split pre-tokenizers, in order
    std::unique_ptr<SplitPattern> byteLevelRegex;  // ByteLevel's own split (use_regex), if any
    bool prefixSpace = false;                      // ByteLevel's add_prefix_space
    std::unique_ptr<BpeModel> model;
    std::vector<AddedToken> added;
    AddedTokenMatcher rawMatcher;                  // added tokens with normalized = false
    AddedTokenMatcher normalizedMatcher;           // and with normalized = true
    std::unordered_map<std::string, int32_t> addedIds;

    // Decoding: the bytes of id i are decoded[decodedEnd[i - 1], decodedEnd[i]) (from 0 for id 0).
    std::string decoded;
    std::vector<uint32_t> decodedEnd;
    enum : uint8_t { Present = 1, Special = 2 };
    std::vector<uint8_t> idFlags;
};

// TokenizerError naming `source` and the field for anything it cannot read or does not support.
std::shared_ptr<Tokenizer::Impl> readTokenizerJson(const std::string& json, const std::string& source);

} // namespace parallax
