#pragma once

#include <stdexcept>
#include <string>

namespace parallax {

// A dataset that cannot be read or does not fit the model. The message names the file or field
// and says how to fix it.
class DataError : public std::runtime_error {
public:
    explicit DataError(const std::string& message) : std::runtime_error(message) {}
};

} // namespace parallax
