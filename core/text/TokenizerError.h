#pragma once

#include <stdexcept>
#include <string>

namespace parallax {

// A tokenizer that cannot be loaded (unreadable, corrupt or unsupported tokenizer.json; the message
// names the file and the field) or an id that is not in its vocabulary.
class TokenizerError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

} // namespace parallax
