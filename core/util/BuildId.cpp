#include "core/util/BuildId.h"

#include <elf.h>
#include <link.h>

#include <cstdint>
#include <cstring>

#ifndef PARALLAX_VERSION
#define PARALLAX_VERSION "unknown"
#endif

namespace parallax {

namespace {

// Walks the notes of the main program (the first object dl_iterate_phdr reports) for the GNU
// build id.
int findBuildId(dl_phdr_info* info, size_t, void* out) {
    std::string& id = *static_cast<std::string*>(out);
    for (int i = 0; i < info->dlpi_phnum; ++i) {
        const ElfW(Phdr)& ph = info->dlpi_phdr[i];
        if (ph.p_type != PT_NOTE) continue;
        const auto* at = reinterpret_cast<const unsigned char*>(info->dlpi_addr + ph.p_vaddr);
        const unsigned char* end = at + ph.p_memsz;
        while (at + sizeof(ElfW(Nhdr)) <= end) {
            ElfW(Nhdr) note;
            std::memcpy(&note, at, sizeof note);
            const unsigned char* name = at + sizeof note;
            const unsigned char* desc = name + ((note.n_namesz + 3) & ~3u);
            const unsigned char* next = desc + ((note.n_descsz + 3) & ~3u);
            if (next > end) break;
            if (note.n_type == NT_GNU_BUILD_ID && note.n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0) {
                static const char* hex = "0123456789abcdef";
                for (uint32_t b = 0; b < note.n_descsz; ++b) {
                    id += hex[desc[b] >> 4];
                    id += hex[desc[b] & 0xF];
                }
                return 1;
            }
            at = next;
        }
    }
    return 1; // the main program only
}

} // namespace

std::string executableBuildId() {
    std::string id;
    dl_iterate_phdr(findBuildId, &id);
    return id;
}

std::string versionLine(const std::string& program) {
    const std::string id = executableBuildId();
    return program + " " + PARALLAX_VERSION + " (build " + (id.empty() ? std::string("unknown") : id) + ")";
}

} // namespace parallax
