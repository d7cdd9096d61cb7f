#include "core/launch/StopSignalHandler.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>

namespace parallax {

namespace {

std::atomic<int> g_stopFd{-1};
struct sigaction g_previous[3];
constexpr int kSignals[3] = {SIGINT, SIGTERM, SIGHUP};

extern "C" void onStopSignal(int sig) {
    const int saved = errno;
    const int fd = g_stopFd.load();
    if (fd >= 0) {
        const unsigned char byte = static_cast<unsigned char>(sig);
        [[maybe_unused]] const ssize_t n = ::write(fd, &byte, 1);
    }
    errno = saved;
}

} // namespace

StopSignalHandler::StopSignalHandler(int writeFd) {
    g_stopFd.store(writeFd);
    struct sigaction sa {};
    sa.sa_handler = onStopSignal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    for (int i = 0; i < 3; ++i)
        sigaction(kSignals[i], &sa, &g_previous[i]);
}

StopSignalHandler::~StopSignalHandler() {
    for (int i = 0; i < 3; ++i)
        sigaction(kSignals[i], &g_previous[i], nullptr);
    g_stopFd.store(-1);
}

} // namespace parallax
