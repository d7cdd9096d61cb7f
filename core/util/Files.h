#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace parallax {

// File-system helpers over POSIX, for code that runs inside the worker. std::filesystem is avoided
// there on purpose: PyTorch's wheels export the libstdc++ filesystem symbols they link statically,
// and calls from the worker then bind to those and crash (pytorch/pytorch#133437).
class FileError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// The text of errno value `err` as it reads inside a sentence: "no space left on device".
std::string errnoText(int err);

bool pathExists(const std::string& path);
bool isRegularFile(const std::string& path);
bool isDirectory(const std::string& path);
int64_t fileSize(const std::string& path); // -1 when it cannot be read
std::string joinPath(const std::string& folder, const std::string& name);
std::string baseName(const std::string& path);
std::string parentPath(const std::string& path);
// The entries of a folder, sorted, without "." and "..". FileError when it cannot be read.
std::vector<std::string> listDirectory(const std::string& path);
// mkdir -p. FileError naming the folder and the reason.
void createDirectories(const std::string& path);
// rm -rf; a missing path is fine. FileError when something cannot be removed.
void removeAll(const std::string& path);
// rename(2), replacing an empty destination folder or a file. FileError on failure.
void renamePath(const std::string& from, const std::string& to);
// Writes through a temporary file in the same folder, fsynced, then renamed over `path`; on failure
// the temporary file is removed and `path` is untouched. FileError saying what failed, e.g. "no space
// left on device writing <path> (<path>.tmp): 4096 of 10000 bytes written".
void writeFileAtomic(const std::string& path, const std::string& contents);
std::string readFile(const std::string& path); // FileError when it cannot be read

} // namespace parallax
