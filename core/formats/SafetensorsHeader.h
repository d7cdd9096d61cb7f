#pragma once

#include "core/formats/Dtype.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace parallax {

// One tensor as a safetensors header describes it. Offsets count from the first byte after the
// header; the data is row-major ('C' order) and little-endian.
struct TensorInfo {
    std::string name;
    Dtype dtype = Dtype::F32;
    std::vector<int64_t> shape;
    uint64_t begin = 0;
    uint64_t end = 0;

    uint64_t byteSize() const { return end - begin; }
    int64_t elementCount() const; // 1 for a scalar (shape []), 0 when a dimension is 0
};

using TensorMetadata = std::vector<std::pair<std::string, std::string>>;

struct SafetensorsHeader {
    std::vector<TensorInfo> tensors; // by offset
    TensorMetadata metadata;         // `__metadata__`, in the header's order
};

// The largest header the format allows.
constexpr uint64_t kMaxSafetensorsHeader = 100'000'000;

// Parses and checks a header (the JSON after the 8-byte length) for a file whose data, after the
// header, holds `dataBytes` bytes. Every rule of the format is checked: UTF-8 JSON object, only
// spaces around it; tensors with a known dtype, a shape of non-negative dimensions whose element
// count times the dtype's size is the tensor's byte length (no overflow), and `data_offsets` that,
// sorted, cover the data from 0 to its end with no hole or overlap; no name twice; `__metadata__`
// a map of strings to strings. Throws FormatError naming `file` and the tensor at fault.
SafetensorsHeader parseSafetensorsHeader(std::string_view json, uint64_t dataBytes, const std::string& file);

// The bytes a tensor of `shape` and `dtype` takes; false (with `problem`) when the dimensions multiply
// past 2^63 or, for the 4- and 6-bit kinds, the bits do not fill whole bytes.
bool tensorByteSize(Dtype dtype, const std::vector<int64_t>& shape, uint64_t& bytes, std::string& problem);

// "[2, 3]": a shape as messages write it.
std::string shapeText(const std::vector<int64_t>& shape);

// The first name that `names` holds twice; nullptr when each is there once.
const std::string* firstRepeatedName(std::vector<const std::string*> names);

} // namespace parallax
