#include "core/text/AddedVocabulary.h"

#include <unicode/uchar.h>
#include <unicode/utf8.h>

#include <algorithm>
#include <cstring>
#include <set>

namespace parallax {

namespace {

// char::is_alphanumeric and char::is_whitespace of Rust, which the Rust tokenizers use for the flags.
bool isAlphanumeric(UChar32 c) {
    if (u_hasBinaryProperty(c, UCHAR_ALPHABETIC))
        return true;
    const int8_t type = u_charType(c);
    return type == U_DECIMAL_DIGIT_NUMBER || type == U_LETTER_NUMBER || type == U_OTHER_NUMBER;
}

bool isWhitespace(UChar32 c) { return u_hasBinaryProperty(c, UCHAR_WHITE_SPACE); }

UChar32 lastChar(std::string_view text, size_t end, size_t& start) {
    int32_t i = static_cast<int32_t>(end);
    UChar32 c = 0;
    U8_PREV(reinterpret_cast<const uint8_t*>(text.data()), 0, i, c);
    start = static_cast<size_t>(i);
    return c;
}

UChar32 charAt(std::string_view text, size_t at, size_t& next) {
    int32_t i = static_cast<int32_t>(at);
    UChar32 c = 0;
    U8_NEXT(reinterpret_cast<const uint8_t*>(text.data()), i, static_cast<int32_t>(text.size()), c);
    next = static_cast<size_t>(i);
    return c;
}

} // namespace

AddedTokenMatcher::AddedTokenMatcher(const std::vector<AddedToken>& tokens, bool normalized,
                                     const UnicodeNormalizer& normalizer) {
    std::set<std::string> seen;
    for (const AddedToken& t : tokens) {
        if (t.normalized != normalized || t.content.empty())
            continue;
        std::string content = normalized ? normalizer.normalized(t.content) : t.content;
        if (!seen.insert(content).second)
            continue; // the first token of a content wins
        m_firstByte[static_cast<uint8_t>(content[0])] = true;
        m_entries.push_back({std::move(content), t});
    }
    std::stable_sort(m_entries.begin(), m_entries.end(),
                     [](const Entry& a, const Entry& b) { return a.content.size() > b.content.size(); });
}

bool AddedTokenMatcher::accept(std::string_view text, const Entry& e, size_t& start, size_t& end,
                               size_t taken) const {
    const AddedToken& t = e.token;
    if (t.single_word) {
        size_t at = 0;
        const bool wordBefore = start > 0 && isAlphanumeric(lastChar(text, start, at));
        const bool wordAfter = end < text.size() && isAlphanumeric(charAt(text, end, at));
        if (wordBefore || wordAfter)
            return false;
    }
    if (t.lstrip) {
        size_t s = start;
        while (s > taken) {
            size_t previous = 0;
            if (!isWhitespace(lastChar(text, s, previous)))
                break;
            s = previous;
        }
        start = s;
    }
    if (t.rstrip) {
        while (end < text.size()) {
            size_t next = 0;
            if (!isWhitespace(charAt(text, end, next)))
                break;
            end = next;
        }
    }
    return true;
}

void AddedTokenMatcher::find(std::string_view text, std::vector<Match>& out) const {
    if (m_entries.empty())
        return;
    size_t taken = 0; // the end of the last match: nothing before it is matched again
    size_t i = 0;
    while (i < text.size()) {
        if (!m_firstByte[static_cast<uint8_t>(text[i])]) {
            ++i;
            continue;
        }
        const Entry* found = nullptr;
        for (const Entry& e : m_entries) {
            if (e.content.size() <= text.size() - i && std::memcmp(text.data() + i, e.content.data(), e.content.size()) == 0) {
                found = &e;
                break;
            }
        }
        if (!found) {
            ++i;
            continue;
        }
        size_t start = i, end = i + found->content.size();
        i = end; // a refused single-word match is not searched again, as with Aho-Corasick
        if (!accept(text, *found, start, end, taken))
            continue;
        out.push_back({found->token.id, static_cast<uint32_t>(start), static_cast<uint32_t>(end)});
        taken = end;
        i = end;
    }
}

} // namespace parallax
