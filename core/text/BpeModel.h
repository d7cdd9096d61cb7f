#pragma once

#include "core/text/PairRankMap.h"
#include "core/text/WordCache.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace parallax {

// The "model" of a byte-level BPE tokenizer.json.
struct BpeOptions {
    std::optional<std::string> unk_token;
    std::string continuing_subword_prefix; // before every character but a word's first
    std::string end_of_word_suffix;        // after a word's last character
    bool fuse_unk = false;
    bool byte_fallback = false;            // characters missing from the vocabulary as <0xXX> tokens
    bool ignore_merges = false;            // a word that is a token is that token, merges or not
};

// Byte-pair encoding over the byte-level alphabet: a word's bytes start as one symbol each (the
// token of the character that stands for the byte), then the adjacent pair of lowest merge rank is
// joined until no pair has one, the leftmost first among equal ranks: the Rust tokenizers' order.
class BpeModel {
public:
    // TokenizerError naming the merge or token that is not in the vocabulary (the caller adds the
    // file).
    BpeModel(std::unordered_map<std::string, int32_t> vocab, const std::vector<std::pair<std::string, std::string>>& merges,
             BpeOptions options);

    // Appends the tokens of `word` (bytes; each stands for its byte-level character) and the byte
    // offset in `word` where each begins, plus `base`. Thread-safe.
    void encodeWord(std::string_view word, uint32_t base, std::vector<int32_t>& ids,
                    std::vector<uint32_t>& starts) const;

    const std::unordered_map<std::string, int32_t>& vocab() const { return m_vocab; }
    size_t mergeCount() const { return m_merges.size(); }

private:
    // What one byte of a word starts as, by where it stands: 0 first, 1 inside, 2 last, 3 alone.
    struct Initial {
        enum Kind : uint8_t { Token, Fallback, Unknown, Dropped } kind = Dropped;
        int32_t id = -1;
        std::vector<int32_t> fallback; // <0xXX> tokens of the character's bytes
    };
    struct Symbol {
        int32_t id;
        int32_t prev;
        int32_t next;
        uint32_t start;
    };
    Initial initialFor(uint8_t byte, bool first, bool last) const;
    void initialSymbols(std::string_view word, std::vector<Symbol>& symbols) const;
    void mergeAll(std::vector<Symbol>& symbols) const;

    std::unordered_map<std::string, int32_t> m_vocab;
    PairRankMap m_merges;
    BpeOptions m_options;
    int32_t m_unkId = -1;
    std::array<std::array<Initial, 256>, 4> m_initial;
    mutable WordCache m_cache;
};

} // namespace parallax
