#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace parallax {

// A piece of a text, as byte offsets into it.
struct TextPiece {
    uint32_t start = 0;
    uint32_t end = 0;
};

// The `Split` pre-tokenizer of a tokenizer.json: a pattern (a regular expression written for
// Oniguruma, which the Rust tokenizers compile them with, or a literal string) and what happens to
// its matches. The expression runs on PCRE2 (UTF, Unicode properties, JIT); the few places where
// Oniguruma's syntax means something else are rewritten first: \s and \S are Unicode White_Space
// (PCRE2's \s also takes U+180E), \w the Oniguruma word characters, \h a hex digit.
class SplitPattern {
public:
    enum class Behavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

    // TokenizerError saying what is wrong with the expression (the caller adds the file).
    static SplitPattern regex(const std::string& pattern, Behavior behavior, bool invert);
    static SplitPattern literal(const std::string& text, Behavior behavior, bool invert);
    // The name of a behavior as tokenizer.json writes it ("Isolated"), or false.
    static bool behaviorNamed(const std::string& name, Behavior& behavior);

    SplitPattern(SplitPattern&&) noexcept;
    SplitPattern& operator=(SplitPattern&&) noexcept;
    ~SplitPattern();

    // Appends the non-empty pieces of `text` (valid UTF-8) to `out`, offsets shifted by `base`.
    // Thread-safe.
    void split(std::string_view text, uint32_t base, std::vector<TextPiece>& out) const;

    const std::string& source() const { return m_source; }

private:
    struct Compiled;
    SplitPattern(std::string source, std::unique_ptr<Compiled> compiled, Behavior behavior, bool invert);
    // Each match as [start, end); `nonMatch` pieces between them. Calls `emit(start, end, isMatch)`
    // for every stretch of `text` in order.
    template <typename Emit>
    void forEachStretch(std::string_view text, Emit&& emit) const;

    std::string m_source;
    std::unique_ptr<Compiled> m_compiled;
    Behavior m_behavior = Behavior::Isolated;
    bool m_invert = false;
};

// The expression written for Oniguruma rewritten for PCRE2 (see SplitPattern); TokenizerError for
// what PCRE2 cannot express (nested character classes, class intersections).
std::string oniguramaToPcre2(const std::string& pattern);

} // namespace parallax
