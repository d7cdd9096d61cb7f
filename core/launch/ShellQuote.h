#pragma once

#include <string>
#include <string_view>

namespace parallax {

// `text` as one shell word: unchanged when it has only safe characters, else in single quotes.
// Every command line Parallax shows or hands a remote shell quotes its words with it.
std::string shellQuote(std::string_view text);

} // namespace parallax
