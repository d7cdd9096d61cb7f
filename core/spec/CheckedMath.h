#pragma once

#include <cstdint>
#include <limits>
#include <optional>

namespace parallax {

// Arithmetic over spec values. A spec is a file a person (or a typo) wrote: any field can hold any
// TOML integer, so a product of two fields can overflow (undefined behaviour; a product that wraps
// to 0 and is then divided by is SIGFPE). Every sum, product and quotient over spec values in
// validation and estimates goes through these.

// The exact result, or nullopt when it does not fit in 64 bits (or divides by 0, or is
// INT64_MIN / -1).
inline std::optional<int64_t> checkedAdd(int64_t a, int64_t b) {
    int64_t r = 0;
    if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
    return r;
}

inline std::optional<int64_t> checkedSub(int64_t a, int64_t b) {
    int64_t r = 0;
    if (__builtin_sub_overflow(a, b, &r)) return std::nullopt;
    return r;
}

inline std::optional<int64_t> checkedMul(int64_t a, int64_t b) {
    int64_t r = 0;
    if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
    return r;
}

inline std::optional<int64_t> checkedMul(int64_t a, int64_t b, int64_t c) {
    const std::optional<int64_t> ab = checkedMul(a, b);
    return ab ? checkedMul(*ab, c) : std::nullopt;
}

inline std::optional<int64_t> checkedDiv(int64_t a, int64_t b) {
    if (b == 0 || (a == std::numeric_limits<int64_t>::min() && b == -1)) return std::nullopt;
    return a / b;
}

inline std::optional<int64_t> checkedMod(int64_t a, int64_t b) {
    if (b == 0) return std::nullopt;
    if (b == -1) return 0; // INT64_MIN % -1 traps on x86 although the result is 0
    return a % b;
}

// Clamped to the int64 range instead of wrapping: for sizes that only need to compare as "more
// than any machine has" (the world size of dp * tp * pp = 2^62 * 4 is not 0).
inline int64_t saturatingMul(int64_t a, int64_t b) {
    if (const auto r = checkedMul(a, b)) return *r;
    return (a < 0) != (b < 0) ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max();
}

inline int64_t saturatingAdd(int64_t a, int64_t b) {
    if (const auto r = checkedAdd(a, b)) return *r;
    return a < 0 ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max();
}

} // namespace parallax
