/* libparallax-loopback.so: preloaded (LD_PRELOAD) into the mpirun of a local run, so that no socket
 * of it listens on an address other hosts can reach.
 *
 * Open MPI 4.1's out-of-band listener binds 0.0.0.0 and [::] whatever oob_tcp_if_include says
 * (orte/mca/oob/tcp/oob_tcp_listener.c binds INADDR_ANY and in6addr_any), and no MCA parameter
 * changes that. Here bind(2) to a wildcard address binds the loopback address of the same family
 * instead; every other bind is passed on unchanged.
 *
 * The library takes itself out of LD_PRELOAD as it loads, so that the ranks mpirun starts (which
 * inherit its environment) run without it: their own transports are set to shared memory, and a
 * rank whose transport a person set to TCP must listen where it advertises itself. Plain C with no
 * sanitizer flags, since it is loaded into programs built without them. */

#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

typedef int (*BindFunction)(int, const struct sockaddr*, socklen_t);

static const char kLibraryName[] = "libparallax-loopback.so";

/* Whether the LD_PRELOAD entry [begin, end) names this library (by its file name). */
static int namesThisLibrary(const char* begin, const char* end) {
    const size_t nameLength = sizeof kLibraryName - 1;
    if ((size_t)(end - begin) < nameLength || memcmp(end - nameLength, kLibraryName, nameLength) != 0)
        return 0;
    return (size_t)(end - begin) == nameLength || *(end - nameLength - 1) == '/';
}

/* LD_PRELOAD without this library's entries (they are separated by ':' or spaces). */
__attribute__((constructor)) static void leaveThePreloadList(void) {
    const char* list = getenv("LD_PRELOAD");
    if (!list)
        return;
    char* kept = malloc(strlen(list) + 1);
    if (!kept)
        return;
    size_t length = 0;
    const char* p = list;
    while (*p) {
        while (*p == ':' || *p == ' ')
            ++p;
        const char* begin = p;
        while (*p && *p != ':' && *p != ' ')
            ++p;
        if (p == begin || namesThisLibrary(begin, p))
            continue;
        if (length > 0)
            kept[length++] = ':';
        memcpy(kept + length, begin, (size_t)(p - begin));
        length += (size_t)(p - begin);
    }
    kept[length] = '\0';
    if (length == 0)
        unsetenv("LD_PRELOAD");
    else
        setenv("LD_PRELOAD", kept, 1);
    free(kept);
}

__attribute__((visibility("default"))) int bind(int fd, const struct sockaddr* address, socklen_t length) {
    static BindFunction next = NULL;
    if (!next)
        next = (BindFunction)dlsym(RTLD_NEXT, "bind");
    if (!next) {
        errno = ENOSYS;
        return -1;
    }
    if (address && address->sa_family == AF_INET && length >= (socklen_t)sizeof(struct sockaddr_in)) {
        struct sockaddr_in v4;
        memcpy(&v4, address, sizeof v4);
        if (v4.sin_addr.s_addr == htonl(INADDR_ANY)) {
            v4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            return next(fd, (const struct sockaddr*)&v4, sizeof v4);
        }
    } else if (address && address->sa_family == AF_INET6 && length >= (socklen_t)sizeof(struct sockaddr_in6)) {
        struct sockaddr_in6 v6;
        memcpy(&v6, address, sizeof v6);
        if (IN6_IS_ADDR_UNSPECIFIED(&v6.sin6_addr)) {
            v6.sin6_addr = in6addr_loopback;
            return next(fd, (const struct sockaddr*)&v6, sizeof v6);
        }
    }
    return next(fd, address, length);
}
