#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace parallax {

// The largest value Parallax accepts for a count field. The bounds lie far beyond any real model
// or cluster; they exist so that the validator and the estimates handle every number a spec can
// hold (and a typo of a few extra digits is an error naming the field, not a hang, a crash or a
// terabyte estimate). Within them, every product the estimates form fits in 64 bits.
struct FieldLimit {
    const char* field;  // "model.dim"
    int64_t most;
    const char* reason; // why no real spec comes near it
};

// Every bounded field, in file order.
const std::vector<FieldLimit>& fieldLimits();
// The bound of `field`, or nullptr when it has none.
const FieldLimit* fieldLimit(const std::string& field);

// Processes of one run (parallel.dp * tp * pp, launch.processes).
constexpr int64_t kMaxProcesses = int64_t(1) << 20;
// parallel.bucket_mb, MiB.
constexpr double kMaxBucketMb = 65536.0;

// "" when `value` is at least `minimum` and within the field's bound; otherwise the error:
// "model.dim = 0 must be at least 1", "model.dim = 999999999999999989 is more than 1048576 (2^20),
// the most Parallax accepts: ...".
std::string countProblem(const std::string& field, int64_t value, int64_t minimum);

// "1048576 (2^20)" for a power of two above 1024, else the number.
std::string limitText(int64_t most);

} // namespace parallax
