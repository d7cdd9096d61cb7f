#include "core/formats/TensorView.h"

#include "core/formats/FormatError.h"
#include "core/formats/SafetensorsHeader.h"

#include <stdexcept>

namespace parallax {

namespace {

// The bytes of one row (all dimensions but the first) of `shape`; shape must have a dimension.
ByteRange rowRange(const std::string& name, Dtype dtype, const std::vector<int64_t>& shape, int64_t r0, int64_t r1,
                   const std::string& file) {
    if (shape.empty())
        throw std::out_of_range(file + ": tensor " + quoteName(name) + " is a scalar; it has no rows");
    if (r0 < 0 || r1 < r0 || r1 > shape[0])
        throw std::out_of_range(file + ": tensor " + quoteName(name) + ": rows [" + std::to_string(r0) + ", " +
                                std::to_string(r1) + ") are outside its " + std::to_string(shape[0]) + " rows");
    uint64_t rowElements = 1;
    for (size_t i = 1; i < shape.size(); ++i) rowElements *= static_cast<uint64_t>(shape[i]);
    const uint64_t rowBits = rowElements * static_cast<uint64_t>(dtypeBits(dtype));
    if (rowBits % 8 != 0)
        throw FormatError(file, name, "a row of " + std::to_string(rowElements) + " " + dtypeName(dtype) +
                                          " elements does not end on a byte, so rows cannot be read apart");
    const uint64_t rowBytes = rowBits / 8;
    return {static_cast<uint64_t>(r0) * rowBytes, static_cast<uint64_t>(r1 - r0) * rowBytes};
}

} // namespace

int64_t TensorView::elementCount() const {
    int64_t n = 1;
    for (const int64_t d : shape) n *= d;
    return n;
}

std::vector<int64_t> TensorView::strides() const {
    std::vector<int64_t> s(shape.size(), 1);
    for (size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * (shape[i] > 0 ? shape[i] : 1);
    return s;
}

bool TensorView::aligned() const {
    const int bits = dtypeBits(dtype);
    const uintptr_t bytes = bits >= 8 ? static_cast<uintptr_t>(bits / 8) : 1;
    return reinterpret_cast<uintptr_t>(data) % bytes == 0;
}

TensorView TensorView::rows(int64_t r0, int64_t r1) const {
    const ByteRange range = rowRange(*name, dtype, shape, r0, r1, *path);
    TensorView slab = *this;
    slab.shape[0] = r1 - r0;
    slab.data = range.size > 0 ? data + range.offset : nullptr;
    slab.byteSize = range.size;
    slab.fileOffset = fileOffset + range.offset;
    return slab;
}

ByteRange rowByteRange(const TensorInfo& tensor, int64_t r0, int64_t r1, const std::string& file) {
    return rowRange(tensor.name, tensor.dtype, tensor.shape, r0, r1, file);
}

TensorView makeTensorView(const TensorInfo& tensor, const std::string& file, const std::byte* dataStart,
                          uint64_t dataOffset) {
    TensorView view;
    view.name = &tensor.name;
    view.path = &file;
    view.dtype = tensor.dtype;
    view.shape = tensor.shape;
    view.data = tensor.byteSize() > 0 ? dataStart + tensor.begin : nullptr;
    view.byteSize = tensor.byteSize();
    view.fileOffset = dataOffset + tensor.begin;
    return view;
}

} // namespace parallax
