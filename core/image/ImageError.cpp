#include "core/image/ImageError.h"

namespace parallax {

ImageError::ImageError(const std::string& file, const std::string& reason)
    : std::runtime_error(file + ": " + reason), m_file(file), m_reason(reason) {}

} // namespace parallax
