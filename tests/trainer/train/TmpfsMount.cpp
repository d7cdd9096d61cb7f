#include "tests/trainer/train/TmpfsMount.h"

#include "core/util/Files.h"

#include <cerrno>
#include <sys/mount.h>
#include <sys/stat.h>

namespace parallax::testing {

TmpfsMount::TmpfsMount(const std::string& dir, int64_t bytes) : m_dir(dir) {
    try {
        createDirectories(dir);
    } catch (const FileError& e) {
        m_error = e.what();
        return;
    }
    const std::string options = "size=" + std::to_string(bytes) + ",mode=0755";
    if (::mount("tmpfs", dir.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, options.c_str()) != 0) {
        m_error = "cannot mount a tmpfs on " + dir + " (" + errnoText(errno) +
                  "); this test needs root (CAP_SYS_ADMIN) to fill a small disk";
        return;
    }
    m_mounted = true;
}

TmpfsMount::~TmpfsMount() {
    if (!m_mounted) return;
    if (::umount2(m_dir.c_str(), 0) != 0 && errno == EBUSY) ::umount2(m_dir.c_str(), MNT_DETACH);
}

int64_t diskUsage(const std::string& path) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) return 0;
    int64_t total = S_ISDIR(st.st_mode) ? 0 : static_cast<int64_t>(st.st_blocks) * 512;
    if (S_ISDIR(st.st_mode))
        for (const std::string& name : listDirectory(path)) total += diskUsage(joinPath(path, name));
    return total;
}

} // namespace parallax::testing
