#pragma once

#include "core/formats/Dtype.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace parallax {

struct TensorInfo;

// A tensor's bytes where they lie in a mapped file, without a copy: row-major (contiguous strides),
// little-endian. Valid while the file (SafetensorsFile, Checkpoint) that made it is open. A LibTorch
// tensor can wrap it (from_blob with data, shape and strides()) when aligned() holds; else copy it.
struct TensorView {
    const std::string* name = nullptr;
    const std::string* path = nullptr; // the file it lies in
    Dtype dtype = Dtype::F32;
    std::vector<int64_t> shape;
    const std::byte* data = nullptr;   // nullptr only for a tensor of no bytes
    uint64_t byteSize = 0;
    uint64_t fileOffset = 0;           // where `data` starts in the file, for pread or O_DIRECT readers

    int64_t elementCount() const;
    // Contiguous strides, in elements (a dimension of 0 counts as 1, as LibTorch counts it).
    std::vector<int64_t> strides() const;
    // Whether `data` is aligned to the element size (always, for files this project or Hugging Face's
    // tools write; a file from elsewhere may place a tensor at an odd offset).
    bool aligned() const;
    // Rows [r0, r1) of the first dimension: a tensor-parallel slab of a 2-D weight, as a view of its
    // own whose shape starts with r1 - r0. Throws std::out_of_range naming the tensor when the rows
    // are not inside [0, shape[0]] or the tensor is a scalar, and FormatError when a row of a 4- or
    // 6-bit dtype does not end on a byte.
    TensorView rows(int64_t r0, int64_t r1) const;
};

// Where rows [r0, r1) of a tensor lie, in bytes from the tensor's first byte.
struct ByteRange {
    uint64_t offset = 0;
    uint64_t size = 0;
};
// For readers that do not map the file: add the tensor's offset in the file. Throws as rows() does.
ByteRange rowByteRange(const TensorInfo& tensor, int64_t r0, int64_t r1, const std::string& file);

// The view of `tensor`, whose data starts at `dataStart` (the first byte after the header, at
// `dataOffset` in the file).
TensorView makeTensorView(const TensorInfo& tensor, const std::string& file, const std::byte* dataStart,
                          uint64_t dataOffset);

} // namespace parallax
