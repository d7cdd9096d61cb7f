#pragma once

#include <chrono>
#include <functional>
#include <thread>

namespace parallax::testing {

// Polls `done` every `every` until it holds; false when `timeout` passed first.
inline bool waitUntil(const std::function<bool()>& done, std::chrono::milliseconds timeout,
                      std::chrono::milliseconds every = std::chrono::milliseconds(100)) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < end) {
        if (done())
            return true;
        std::this_thread::sleep_for(every);
    }
    return done();
}

} // namespace parallax::testing
