#pragma once

#include "core/text/UnicodeNormalizer.h"

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace parallax {

// An entry of tokenizer.json's "added_tokens": matched in the text before it is split into words,
// as the Rust tokenizers do.
struct AddedToken {
    int32_t id = 0;
    std::string content;
    bool single_word = false; // only where no letter or digit touches it on either side
    bool lstrip = false;      // takes the whitespace before it
    bool rstrip = false;      // takes the whitespace after it
    bool normalized = false;  // matched in the normalized text (else in the text as given)
    bool special = false;
};

// Where added tokens stand in a text: leftmost-longest matches (at the first place where some token
// starts, the longest that does), each filtered and widened by its flags.
class AddedTokenMatcher {
public:
    struct Match {
        int32_t id;
        uint32_t start; // the span the token stands for, stripped whitespace included
        uint32_t end;
    };

    AddedTokenMatcher() = default;
    // The tokens of `tokens` whose `normalized` flag equals `normalized`, their contents normalized
    // by `normalizer` when it is set.
    AddedTokenMatcher(const std::vector<AddedToken>& tokens, bool normalized, const UnicodeNormalizer& normalizer);

    bool empty() const { return m_entries.empty(); }
    // Appends the matches in `text` (valid UTF-8), in order and not overlapping.
    void find(std::string_view text, std::vector<Match>& out) const;

private:
    struct Entry {
        std::string content; // normalized when the matcher is
        AddedToken token;
    };
    bool accept(std::string_view text, const Entry& e, size_t& start, size_t& end, size_t taken) const;

    std::vector<Entry> m_entries;               // longest first
    std::array<bool, 256> m_firstByte{};        // some entry starts with this byte
};

} // namespace parallax
