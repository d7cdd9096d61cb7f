#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace parallax {

// The value of the enum E whose name is `name`, where names[i] names the value i (a run-time
// vocabulary's one table); nullopt for a name that is none of them.
template <class E, size_t N>
std::optional<E> enumNamed(const char* const (&names)[N], std::string_view name) {
    for (size_t i = 0; i < N; ++i)
        if (name == names[i]) return static_cast<E>(i);
    return std::nullopt;
}

} // namespace parallax
