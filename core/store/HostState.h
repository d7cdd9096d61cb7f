#pragma once

#include "core/util/EnumNames.h"

#include <optional>
#include <string_view>
#include <type_traits>

namespace parallax {

// How a host of a run answers its supervisor's probes: answering; silent for a while (said, not
// yet fatal); lost once silent past launch.host_timeout_s. Stored and shown by name.
enum class HostState { Answering, Silent, Lost };

inline constexpr const char* kHostStateNames[] = {"answering", "silent", "lost"};
static_assert(std::extent_v<decltype(kHostStateNames)> == static_cast<size_t>(HostState::Lost) + 1,
              "a name per HostState");

inline const char* hostStateName(HostState state) { return kHostStateNames[static_cast<size_t>(state)]; }
inline std::optional<HostState> hostStateNamed(std::string_view name) {
    return enumNamed<HostState>(kHostStateNames, name);
}

} // namespace parallax
