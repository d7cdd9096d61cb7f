#pragma once

#include <cstdint>
#include <string>

namespace parallax::testing {

// A tmpfs of a fixed size mounted on a folder for as long as the object lives, to fill a disk for
// real. Mounting needs CAP_SYS_ADMIN; where it is refused, mounted() is false and error() says why
// (tests skip with it). Unmounted at destruction, lazily when something still holds it open.
class TmpfsMount {
public:
    TmpfsMount(const std::string& dir, int64_t bytes); // creates `dir` when missing
    ~TmpfsMount();
    TmpfsMount(const TmpfsMount&) = delete;
    TmpfsMount& operator=(const TmpfsMount&) = delete;

    bool mounted() const { return m_mounted; }
    const std::string& error() const { return m_error; }
    const std::string& path() const { return m_dir; }

private:
    std::string m_dir;
    bool m_mounted = false;
    std::string m_error;
};

// Bytes that the files under `path` take on their file system (allocated blocks, not lengths): what
// they need of a tmpfs.
int64_t diskUsage(const std::string& path);

} // namespace parallax::testing
