#include "trainer/train/TelemetryEmitter.h"

#include "core/telemetry/TelemetryCodec.h"

#include <cerrno>
#include <chrono>
#include <unistd.h>

namespace parallax {

double TelemetryEmitter::now() {
    using namespace std::chrono;
    return duration<double>(system_clock::now().time_since_epoch()).count();
}

void TelemetryEmitter::emit(const TelemetryEvent& event) {
    writeLine(encodeEvent(event));
}

void TelemetryEmitter::log(const std::string& level, const std::string& message) {
    LogEvent e;
    e.rank = m_rank;
    e.level = level;
    e.message = message;
    e.t = now();
    emit(e);
}

void TelemetryEmitter::writeLine(const std::string& line) {
    std::string out = line;
    out.push_back('\n');
    std::lock_guard<std::mutex> lock(m_mutex);
    const char* p = out.data();
    size_t left = out.size();
    while (left > 0) {
        const ssize_t n = ::write(m_fd, p, left);
        if (n < 0) {
            if (errno == EINTR) continue;
            return; // the supervisor is gone; training state is still checkpointed on stop
        }
        p += n;
        left -= static_cast<size_t>(n);
    }
}

} // namespace parallax
