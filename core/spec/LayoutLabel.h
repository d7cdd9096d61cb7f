#pragma once

#include "core/spec/RunSpec.h"

#include <string>

namespace parallax {

// A layout as runs, checkpoints and logs name it: "dp2 tp1 pp2 zero1".
inline std::string layoutLabel(const ParallelSpec& p) {
    return "dp" + std::to_string(p.dp) + " tp" + std::to_string(p.tp) + " pp" + std::to_string(p.pp) + " zero" +
           std::to_string(p.zero);
}

} // namespace parallax
