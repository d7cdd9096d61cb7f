#pragma once

#include "core/util/EnumNames.h"

#include <optional>
#include <string_view>
#include <type_traits>

namespace parallax {

// What the supervisor finds wrong while a run goes: a hang (no step for telemetry.hang_after_s), a
// straggler (a rank much slower than the others), a run whose files pass retention.disk_budget_gb.
// Stored and shown by name.
enum class AlertKind { Hang, Straggler, DiskBudget };

inline constexpr const char* kAlertKindNames[] = {"hang", "straggler", "disk_budget"};
static_assert(std::extent_v<decltype(kAlertKindNames)> == static_cast<size_t>(AlertKind::DiskBudget) + 1,
              "a name per AlertKind");

inline const char* alertKindName(AlertKind kind) { return kAlertKindNames[static_cast<size_t>(kind)]; }
inline std::optional<AlertKind> alertKindNamed(std::string_view name) {
    return enumNamed<AlertKind>(kAlertKindNames, name);
}

} // namespace parallax
