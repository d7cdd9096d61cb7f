#include "core/spec/MachineInfo.h"

#include <cstdio>
#include <cstring>
#include <unistd.h>

namespace parallax {

namespace {

// MemTotal in bytes, 0 when /proc/meminfo cannot be read.
int64_t memTotalBytes() {
    std::FILE* f = std::fopen("/proc/meminfo", "r");
    if (!f) return 0;
    char line[256];
    int64_t bytes = 0;
    while (std::fgets(line, sizeof line, f)) {
        long long kib = 0;
        if (std::strncmp(line, "MemTotal:", 9) == 0 && std::sscanf(line + 9, "%lld", &kib) == 1 && kib > 0) {
            bytes = static_cast<int64_t>(kib) * 1024;
            break;
        }
    }
    std::fclose(f);
    return bytes;
}

} // namespace

MachineInfo thisMachine() {
    MachineInfo m;
    const long cores = sysconf(_SC_NPROCESSORS_ONLN);
    m.cores = cores > 0 ? cores : 0;
    m.ram_bytes = memTotalBytes();
    if (m.ram_bytes == 0) {
        const long pages = sysconf(_SC_PHYS_PAGES);
        const long pageSize = sysconf(_SC_PAGESIZE);
        if (pages > 0 && pageSize > 0) m.ram_bytes = static_cast<int64_t>(pages) * pageSize;
    }
    return m;
}

} // namespace parallax
