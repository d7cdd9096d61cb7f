#pragma once

#include <string>

namespace parallax {

// This machine's name as gethostname(2) gives it, for messages that say where something happened;
// "localhost" when it cannot be read.
std::string hostName();

} // namespace parallax
