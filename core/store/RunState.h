#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace parallax {

// queued -> running -> succeeded | failed | stopped; lost when its supervisor vanished. Stored,
// printed and sent by its name (runStateName), from the one table in RunState.cpp.
enum class RunState { Queued, Running, Succeeded, Failed, Stopped, Lost };

// "queued", "running", ...
const std::string& runStateName(RunState state);
// The state a name stands for; nullopt for a name that is none of them.
std::optional<RunState> runStateNamed(std::string_view name);
// Every state, in the enum's order.
const std::vector<RunState>& runStates();
// A state a run does not leave: succeeded, failed, stopped or lost.
bool isTerminal(RunState state);

// Writes the state's name.
inline std::ostream& operator<<(std::ostream& out, RunState state) { return out << runStateName(state); }

} // namespace parallax
