#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace parallax {

// The element types of the safetensors format, in the order the format itself ranks them (by
// alignment): Hugging Face's writer stores the tensors of a file from the last of this order to the
// first, which keeps every tensor aligned to its element size.
enum class Dtype : uint8_t {
    Bool,
    F4,
    F6_E2M3,
    F6_E3M2,
    U8,
    I8,
    F8_E5M2,
    F8_E4M3,
    F8_E8M0,
    F8_E4M3FNUZ,
    F8_E5M2FNUZ,
    I16,
    U16,
    F16,
    BF16,
    I32,
    U32,
    F32,
    C64,
    F64,
    I64,
    U64,
};
constexpr int kDtypeCount = static_cast<int>(Dtype::U64) + 1;

// "F32", "BF16", "F8_E4M3", ... as the header writes them.
const char* dtypeName(Dtype dtype);
// The dtype a header names; nullopt for anything else (names are case-sensitive).
std::optional<Dtype> dtypeFromName(std::string_view name);
// Bits of one element: 4 and 6 for the micro-float kinds, else 8 to 64.
int dtypeBits(Dtype dtype);
// Every name, comma-separated, for messages that list what is allowed.
std::string dtypeNameList();

} // namespace parallax
