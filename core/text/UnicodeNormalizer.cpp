#include "core/text/UnicodeNormalizer.h"

#include "core/text/TokenizerError.h"

#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>
#include <unicode/stringpiece.h>

#include <cstdint>

namespace parallax {

namespace {

const icu::Normalizer2* icuNormalizer(UnicodeNormalizer::Form form) {
    UErrorCode status = U_ZERO_ERROR;
    const icu::Normalizer2* n = nullptr;
    switch (form) {
    case UnicodeNormalizer::Form::NFC: n = icu::Normalizer2::getNFCInstance(status); break;
    case UnicodeNormalizer::Form::NFD: n = icu::Normalizer2::getNFDInstance(status); break;
    case UnicodeNormalizer::Form::NFKC: n = icu::Normalizer2::getNFKCInstance(status); break;
    case UnicodeNormalizer::Form::NFKD: n = icu::Normalizer2::getNFKDInstance(status); break;
    }
    if (U_FAILURE(status) || !n)
        throw TokenizerError(std::string("ICU's Unicode normalization data could not be loaded: ") + u_errorName(status));
    return n;
}

bool isAscii(std::string_view text) {
    for (const char c : text)
        if (static_cast<unsigned char>(c) >= 0x80)
            return false;
    return true;
}

} // namespace

UnicodeNormalizer::UnicodeNormalizer(std::vector<Form> forms) : m_forms(std::move(forms)) {
    for (const Form f : m_forms)
        icuNormalizer(f); // fail at load, not at the first text
}

bool UnicodeNormalizer::formNamed(const std::string& name, Form& form) {
    if (name == "NFC") form = Form::NFC;
    else if (name == "NFD") form = Form::NFD;
    else if (name == "NFKC") form = Form::NFKC;
    else if (name == "NFKD") form = Form::NFKD;
    else return false;
    return true;
}

bool UnicodeNormalizer::normalize(std::string_view text, std::string& out) const {
    if (m_forms.empty() || isAscii(text))
        return false;
    if (text.size() > static_cast<size_t>(INT32_MAX / 4))
        throw TokenizerError("a text of " + std::to_string(text.size()) +
                             " bytes is too long to normalize; split it (at most 512 MiB at a time)");
    std::string current;
    bool changed = false;
    for (const Form f : m_forms) {
        const std::string_view view = changed ? std::string_view(current) : text;
        const icu::Normalizer2* n = icuNormalizer(f);
        UErrorCode status = U_ZERO_ERROR;
        const icu::StringPiece piece(view.data(), static_cast<int32_t>(view.size()));
        if (n->isNormalizedUTF8(piece, status) && U_SUCCESS(status))
            continue;
        status = U_ZERO_ERROR;
        std::string next;
        next.reserve(view.size() + view.size() / 4);
        icu::StringByteSink<std::string> sink(&next);
        n->normalizeUTF8(0, piece, sink, nullptr, status);
        if (U_FAILURE(status))
            throw TokenizerError(std::string("Unicode normalization failed: ") + u_errorName(status));
        current.swap(next);
        changed = true;
    }
    if (!changed)
        return false;
    out = std::move(current);
    return true;
}

std::string UnicodeNormalizer::normalized(std::string_view text) const {
    std::string out;
    return normalize(text, out) ? out : std::string(text);
}

} // namespace parallax
