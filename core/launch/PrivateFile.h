#pragma once

#include <cstdio>
#include <string>

namespace parallax {

// A new file of a run's folder, readable by its owner only (a spec may name secrets), opened for
// writing. std::runtime_error naming the file when it cannot be made.
std::FILE* createPrivateFile(const std::string& path);
// `text` as the whole of a new private file.
void writePrivateFile(const std::string& path, const std::string& text);

} // namespace parallax
