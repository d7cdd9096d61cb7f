#include "core/store/RunState.h"

#include <iterator>
#include <type_traits>

namespace parallax {

namespace {

struct Row {
    RunState state;
    const char* name;
    bool terminal;
};

// In RunState's order.
constexpr Row kRows[] = {
    {RunState::Queued, "queued", false},      {RunState::Running, "running", false},
    {RunState::Succeeded, "succeeded", true}, {RunState::Failed, "failed", true},
    {RunState::Stopped, "stopped", true},     {RunState::Lost, "lost", true},
};
static_assert(std::extent_v<decltype(kRows)> == static_cast<size_t>(RunState::Lost) + 1, "a row per RunState");

} // namespace

const std::string& runStateName(RunState state) {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> n;
        for (const Row& r : kRows) n.emplace_back(r.name);
        return n;
    }();
    return names.at(static_cast<size_t>(state));
}

std::optional<RunState> runStateNamed(std::string_view name) {
    for (const Row& r : kRows)
        if (name == r.name) return r.state;
    return std::nullopt;
}

const std::vector<RunState>& runStates() {
    static const std::vector<RunState> all = [] {
        std::vector<RunState> v;
        for (const Row& r : kRows) v.push_back(r.state);
        return v;
    }();
    return all;
}

bool isTerminal(RunState state) { return kRows[static_cast<size_t>(state)].terminal; }

} // namespace parallax
