#pragma once

#include <stdexcept>
#include <string>

namespace parallax {

// An image that cannot be used: missing, unreadable, of a format that is not read, corrupt,
// truncated, or larger than the limits allow. The message names the file and the reason:
// "<file>: <reason>", e.g. "photo.jpg: truncated JPEG (premature end of file)".
class ImageError : public std::runtime_error {
public:
    ImageError(const std::string& file, const std::string& reason);

    const std::string& file() const { return m_file; }
    const std::string& reason() const { return m_reason; }

private:
    std::string m_file;
    std::string m_reason;
};

} // namespace parallax
