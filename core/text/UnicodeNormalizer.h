#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace parallax {

// The normalizer of a tokenizer.json: none, one of the Unicode normalization forms, or a Sequence
// of them (ICU's, with the Unicode version of the system's ICU).
class UnicodeNormalizer {
public:
    enum class Form { NFC, NFD, NFKC, NFKD };

    UnicodeNormalizer() = default; // the identity
    explicit UnicodeNormalizer(std::vector<Form> forms);

    bool isIdentity() const { return m_forms.empty(); }
    // `text` (valid UTF-8) normalized. Returns false and leaves `out` alone when `text` is already
    // normalized (ASCII always is), so that callers copy nothing in the common case.
    bool normalize(std::string_view text, std::string& out) const;
    std::string normalized(std::string_view text) const;

    // The form named as in tokenizer.json ("NFC"), or false.
    static bool formNamed(const std::string& name, Form& form);

private:
    std::vector<Form> m_forms;
};

} // namespace parallax
