#include "trainer/train/StopRequest.h"

#include <atomic>
#include <csignal>

namespace parallax {

namespace {
volatile std::sig_atomic_t g_stop = 0;

extern "C" void onStopSignal(int) {
    g_stop = 1;
}
} // namespace

void StopRequest::installHandlers() {
    struct sigaction sa {};
    sa.sa_handler = onStopSignal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGUSR1, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
    sigaction(SIGINT, &sa, nullptr);
}

bool StopRequest::requested() {
    return g_stop != 0;
}

void StopRequest::request() {
    g_stop = 1;
}

} // namespace parallax
