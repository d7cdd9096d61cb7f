#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace parallax {

// A failure every rank reached together, with the same message (the ranks agreed on it through a
// collective, as saveCheckpoint does): the run can end in order, every rank leaving MPI cleanly,
// instead of one rank aborting the others. `step`: the steps done when it happened.
class AgreedFailure : public std::runtime_error {
public:
    AgreedFailure(const std::string& what, int64_t step) : std::runtime_error(what), m_step(step) {}
    int64_t step() const { return m_step; }

private:
    int64_t m_step;
};

} // namespace parallax
