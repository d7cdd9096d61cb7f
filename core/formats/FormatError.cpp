#include "core/formats/FormatError.h"

namespace parallax {

std::string quoteName(const std::string& name) {
    constexpr size_t kMost = 200;
    std::string text = "\"";
    for (size_t i = 0; i < name.size() && i < kMost; ++i) {
        const auto c = static_cast<unsigned char>(name[i]);
        if (c < 0x20 || c == 0x7F) {
            static const char* hex = "0123456789abcdef";
            text += "\\x";
            text += hex[c >> 4];
            text += hex[c & 15];
        } else {
            text += static_cast<char>(c);
        }
    }
    text += '"';
    if (name.size() > kMost) text += "... (" + std::to_string(name.size()) + " bytes)";
    return text;
}

FormatError::FormatError(const std::string& file, const std::string& problem)
    : std::runtime_error(file + ": " + problem), m_file(file) {}

FormatError::FormatError(const std::string& file, const std::string& tensor, const std::string& problem)
    : std::runtime_error(file + ": tensor " + quoteName(tensor) + ": " + problem), m_file(file), m_tensor(tensor) {}

} // namespace parallax
