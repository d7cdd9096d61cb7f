#pragma once

// Two runs' final checkpoints compared, as the layout tests judge them.

#include "trainer/train/Checkpoint.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>

namespace parallax::testing {

struct WeightsDifference {
    double relative = 0; // the largest |a - b| over the role's tensors / the largest |a|
    std::string where;   // the tensor it is in
};

// The tensors of `role` ("param", "exp_avg") in checkpoints a and b; they must hold the same names.
// With `only`, the tensors it accepts (the scale is then theirs too).
inline WeightsDifference weightsDifference(const std::string& a, const std::string& b, const std::string& role,
                                           const std::function<bool(const std::string&)>& only = {}) {
    CheckpointReader ra(a), rb(b);
    const auto names = ra.names(role);
    EXPECT_EQ(names, rb.names(role)) << role;
    double worst = 0, scale = 1e-12;
    WeightsDifference out;
    for (const std::string& name : names) {
        if (only && !only(name)) continue;
        const torch::Tensor ta = ra.full(name, role), tb = rb.full(name, role);
        const double d = (ta - tb).abs().max().item<double>();
        if (d > worst) {
            worst = d;
            out.where = name;
        }
        scale = std::max(scale, ta.abs().max().item<double>());
    }
    out.relative = worst / scale;
    return out;
}

} // namespace parallax::testing
