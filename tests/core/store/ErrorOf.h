#pragma once

#include "core/store/StoreTypes.h"

#include <functional>
#include <string>

namespace parallax {

// The message of the StoreError that `fn` throws; empty when it throws none.
inline std::string errorOf(const std::function<void()>& fn) {
    try {
        fn();
    } catch (const StoreError& e) {
        return e.what();
    }
    return {};
}

} // namespace parallax
