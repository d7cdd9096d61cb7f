#include "trainer/compat/HostHeap.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace parallax {

void keepFreedMemoryInTheHeap() {
#if defined(__GLIBC__)
    // Blocks up to 1 GiB come from the heap, and up to 2 GiB free at its top stay there.
    mallopt(M_MMAP_THRESHOLD, 1 << 30);
    mallopt(M_TRIM_THRESHOLD, static_cast<int>(0x7fffffff));
#endif
}

void releaseFreedMemory() {
#if defined(__GLIBC__)
    malloc_trim(0);
#endif
}

} // namespace parallax
