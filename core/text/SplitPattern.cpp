#include "core/text/SplitPattern.h"

#include "core/text/TokenizerError.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <cctype>
#include <cstdint>

namespace parallax {

namespace {

const char* kWordChars = "\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}";

// Length of the UTF-8 character whose first byte is `lead`.
size_t charLength(unsigned char lead) {
    if (lead < 0xC0) return 1;
    if (lead < 0xE0) return 2;
    if (lead < 0xF0) return 3;
    return 4;
}

std::string pcre2Message(int code) {
    PCRE2_UCHAR buffer[256];
    if (pcre2_get_error_message(code, buffer, sizeof buffer) < 0)
        return "PCRE2 error " + std::to_string(code);
    return reinterpret_cast<const char*>(buffer);
}

// The escape `\c` (c the character after the backslash) for PCRE2: a rewrite, or empty to keep it.
std::string rewriteEscape(char c, bool inClass, const std::string& pattern, size_t at) {
    const auto refuse = [&](const char* what) {
        throw TokenizerError(std::string("the pattern uses ") + what + " at byte " + std::to_string(at) +
                             ", which cannot be expressed here");
    };
    switch (c) {
    case 's': return "\\p{White_Space}";
    case 'S': return "\\P{White_Space}";
    case 'w': return inClass ? std::string(kWordChars) : "[" + std::string(kWordChars) + "]";
    case 'W':
        if (inClass) refuse("\\W inside a character class");
        return "[^" + std::string(kWordChars) + "]";
    case 'h': return inClass ? "0-9A-Fa-f" : "[0-9A-Fa-f]";
    case 'H':
        if (inClass) refuse("\\H inside a character class");
        return "[^0-9A-Fa-f]";
    default: return {};
    }
}

} // namespace

std::string oniguramaToPcre2(const std::string& pattern) {
    std::string out;
    out.reserve(pattern.size() + 32);
    bool inClass = false;
    size_t i = 0;
    while (i < pattern.size()) {
        const char c = pattern[i];
        if (c == '\\' && i + 1 < pattern.size()) {
            const std::string rewrite = rewriteEscape(pattern[i + 1], inClass, pattern, i);
            if (!rewrite.empty()) {
                out += rewrite;
                i += 2;
                continue;
            }
            const size_t n = 1 + charLength(static_cast<unsigned char>(pattern[i + 1]));
            out.append(pattern, i, n); // \p{..} and \x{..} go on as they are: same syntax
            i += n;
            continue;
        }
        if (inClass && c == '[') {
            const size_t close = pattern.find(":]", i);
            if (i + 1 < pattern.size() && pattern[i + 1] == ':' && close != std::string::npos) {
                out.append(pattern, i, close + 2 - i); // [:alpha:]
                i = close + 2;
                continue;
            }
            throw TokenizerError("the pattern nests a character class at byte " + std::to_string(i) +
                                 ", which cannot be expressed here");
        }
        if (inClass && c == '&' && i + 1 < pattern.size() && pattern[i + 1] == '&')
            throw TokenizerError("the pattern intersects character classes (&&) at byte " + std::to_string(i) +
                                 ", which cannot be expressed here");
        if (!inClass && c == '[') {
            inClass = true;
            out += c;
            ++i;
            // A ']' right after '[' or '[^' is a literal.
            if (i < pattern.size() && pattern[i] == '^') out += pattern[i++];
            if (i < pattern.size() && pattern[i] == ']') out += pattern[i++];
            continue;
        }
        if (inClass && c == ']')
            inClass = false;
        out += c;
        ++i;
    }
    return out;
}

struct SplitPattern::Compiled {
    pcre2_code* code = nullptr;
    bool jit = false; // JIT-compiled: matched through pcre2_jit_match, which skips pcre2_match's setup per call
    ~Compiled() { pcre2_code_free(code); }
};

namespace {

// Per thread: one match-data block (only the whole match is read), a match context with limits
// raised (a run of a million spaces backtracks past PCRE2's default), and a JIT stack grown on
// demand.
struct MatchScratch {
    pcre2_match_data* data = pcre2_match_data_create(1, nullptr);
    pcre2_match_context* context = pcre2_match_context_create(nullptr);
    pcre2_jit_stack* stack = nullptr;
    MatchScratch() {
        pcre2_set_match_limit(context, UINT32_MAX);
        pcre2_set_depth_limit(context, UINT32_MAX);
        pcre2_set_heap_limit(context, 1u << 22); // KiB: 4 GiB
    }
    ~MatchScratch() {
        pcre2_jit_stack_free(stack);
        pcre2_match_context_free(context);
        pcre2_match_data_free(data);
    }
    bool growStack() {
        if (stack)
            return false;
        stack = pcre2_jit_stack_create(32 * 1024, 256 * 1024 * 1024, nullptr);
        if (!stack)
            return false;
        pcre2_jit_stack_assign(context, nullptr, stack);
        return true;
    }
};

thread_local MatchScratch t_scratch;

} // namespace

SplitPattern::SplitPattern(std::string source, std::unique_ptr<Compiled> compiled, Behavior behavior, bool invert)
    : m_source(std::move(source)), m_compiled(std::move(compiled)), m_behavior(behavior), m_invert(invert) {}
SplitPattern::SplitPattern(SplitPattern&&) noexcept = default;
SplitPattern& SplitPattern::operator=(SplitPattern&&) noexcept = default;
SplitPattern::~SplitPattern() = default;

SplitPattern SplitPattern::regex(const std::string& pattern, Behavior behavior, bool invert) {
    const std::string translated = oniguramaToPcre2(pattern);
    int error = 0;
    PCRE2_SIZE offset = 0;
    auto compiled = std::make_unique<Compiled>();
    compiled->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(),
                                   PCRE2_UTF | PCRE2_UCP, &error, &offset, nullptr);
    if (!compiled->code)
        throw TokenizerError("the pattern " + pattern + " does not compile: " + pcre2Message(error) +
                             " (at byte " + std::to_string(offset) + " of " + translated + ")");
    // Without JIT (a platform PCRE2 has none for) the interpreter gives the same matches, slower.
    compiled->jit = pcre2_jit_compile(compiled->code, PCRE2_JIT_COMPLETE) == 0;
    return SplitPattern(pattern, std::move(compiled), behavior, invert);
}

SplitPattern SplitPattern::literal(const std::string& text, Behavior behavior, bool invert) {
    std::string escaped;
    for (const char c : text) {
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x80 && !std::isalnum(u))
            escaped += '\\';
        escaped += c;
    }
    SplitPattern p = regex(escaped, behavior, invert);
    p.m_source = text;
    return p;
}

bool SplitPattern::behaviorNamed(const std::string& name, Behavior& behavior) {
    if (name == "Removed") behavior = Behavior::Removed;
    else if (name == "Isolated") behavior = Behavior::Isolated;
    else if (name == "MergedWithPrevious") behavior = Behavior::MergedWithPrevious;
    else if (name == "MergedWithNext") behavior = Behavior::MergedWithNext;
    else if (name == "Contiguous") behavior = Behavior::Contiguous;
    else return false;
    return true;
}

template <typename Emit>
void SplitPattern::forEachStretch(std::string_view text, Emit&& emit) const {
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    size_t previous = 0;
    size_t from = 0;
    while (from <= text.size()) {
        const int rc = m_compiled->jit ? pcre2_jit_match(m_compiled->code, subject, text.size(), from, 0,
                                                         t_scratch.data, t_scratch.context)
                                       : pcre2_match(m_compiled->code, subject, text.size(), from, PCRE2_NO_UTF_CHECK,
                                                     t_scratch.data, t_scratch.context);
        if (rc == PCRE2_ERROR_JIT_STACKLIMIT && t_scratch.growStack())
            continue;
        if (rc == PCRE2_ERROR_NOMATCH)
            break;
        if (rc < 0)
            throw TokenizerError("the pre-tokenizer's pattern " + m_source + " failed on a text of " +
                                 std::to_string(text.size()) + " bytes: " + pcre2Message(rc));
        const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(t_scratch.data);
        const size_t start = ov[0], end = ov[1];
        if (start > previous)
            emit(previous, start, false);
        if (end > start)
            emit(start, end, true);
        previous = end;
        // After an empty match the search goes on one character later, as Oniguruma's does.
        from = end > start ? end : end + (end < text.size() ? charLength(static_cast<unsigned char>(text[end])) : 1);
    }
    if (previous < text.size())
        emit(previous, text.size(), false);
}

void SplitPattern::split(std::string_view text, uint32_t base, std::vector<TextPiece>& out) const {
    if (text.empty())
        return;
    const auto piece = [base](size_t s, size_t e) {
        return TextPiece{base + static_cast<uint32_t>(s), base + static_cast<uint32_t>(e)};
    };
    if (m_behavior == Behavior::Isolated) {
        forEachStretch(text, [&](size_t s, size_t e, bool) { out.push_back(piece(s, e)); });
        return;
    }
    // The other behaviors, as the Rust tokenizers define them over (stretch, is match) with matches
    // flipped by `invert`.
    bool previousMatch = false;
    bool first = true;
    const size_t before = out.size();
    std::vector<TextPiece> reversed; // MergedWithNext is defined from the end
    std::vector<std::pair<TextPiece, bool>> stretches;
    forEachStretch(text, [&](size_t s, size_t e, bool isMatch) { stretches.push_back({piece(s, e), isMatch != m_invert}); });
    if (m_behavior == Behavior::MergedWithNext) {
        for (auto it = stretches.rbegin(); it != stretches.rend(); ++it) {
            if (it->second && !previousMatch && !reversed.empty()) reversed.back().start = it->first.start;
            else reversed.push_back(it->first);
            previousMatch = it->second;
        }
        out.insert(out.end(), reversed.rbegin(), reversed.rend());
        return;
    }
    for (const auto& [p, isMatch] : stretches) {
        switch (m_behavior) {
        case Behavior::Removed:
            if (!isMatch) out.push_back(p);
            break;
        case Behavior::MergedWithPrevious:
            if (isMatch && !previousMatch && out.size() > before) out.back().end = p.end;
            else out.push_back(p);
            break;
        case Behavior::Contiguous:
            if (isMatch == previousMatch && !first) out.back().end = p.end;
            else out.push_back(p);
            break;
        default: break;
        }
        previousMatch = isMatch;
        first = false;
    }
}

} // namespace parallax
