#include "core/formats/Dtype.h"

namespace parallax {

namespace {

struct DtypeRow {
    const char* name;
    int bits;
};

// Indexed by Dtype.
constexpr DtypeRow kRows[kDtypeCount] = {
    {"BOOL", 8},        {"F4", 4},           {"F6_E2M3", 6},      {"F6_E3M2", 6},  {"U8", 8},   {"I8", 8},
    {"F8_E5M2", 8},     {"F8_E4M3", 8},      {"F8_E8M0", 8},      {"F8_E4M3FNUZ", 8},
    {"F8_E5M2FNUZ", 8}, {"I16", 16},         {"U16", 16},         {"F16", 16},     {"BF16", 16},
    {"I32", 32},        {"U32", 32},         {"F32", 32},         {"C64", 64},     {"F64", 64},
    {"I64", 64},        {"U64", 64},
};

} // namespace

const char* dtypeName(Dtype dtype) {
    return kRows[static_cast<int>(dtype)].name;
}

std::optional<Dtype> dtypeFromName(std::string_view name) {
    for (int i = 0; i < kDtypeCount; ++i)
        if (name == kRows[i].name) return static_cast<Dtype>(i);
    return std::nullopt;
}

int dtypeBits(Dtype dtype) {
    return kRows[static_cast<int>(dtype)].bits;
}

std::string dtypeNameList() {
    std::string text;
    for (int i = 0; i < kDtypeCount; ++i) {
        if (i > 0) text += ", ";
        text += kRows[i].name;
    }
    return text;
}

} // namespace parallax
