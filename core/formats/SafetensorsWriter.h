#pragma once

#include "core/formats/Dtype.h"
#include "core/formats/SafetensorsHeader.h"

#include <cstdint>
#include <string>
#include <vector>

namespace parallax {

// A tensor to write: its bytes, row-major and little-endian, elementCount * dtype size long.
struct TensorData {
    std::string name;
    Dtype dtype = Dtype::F32;
    std::vector<int64_t> shape;
    const void* data = nullptr; // may be nullptr for a tensor of no bytes
};

// The header a file of `tensors` gets, laid out as Hugging Face's safetensors writes it: the
// tensors by element size, largest first, then by name (so each is aligned to its element size),
// `__metadata__` first when there is any, compact JSON padded with spaces to a multiple of 8 bytes.
// `layout` receives the tensors in file order with their offsets, and order[i] is the index in
// `tensors` of layout[i]. Throws std::invalid_argument naming the tensor: an empty or repeated name,
// "__metadata__", a shape the dtype cannot fill, or text that is not UTF-8.
std::string safetensorsHeader(const std::vector<TensorData>& tensors, const TensorMetadata& metadata,
                              std::vector<TensorInfo>& layout, std::vector<size_t>& order);

// Writes one .safetensors file through a temporary file beside it (<path>.tmp), fsynced and then
// renamed over `path`: a reader never sees half a file, and on a failure `path` keeps what it held.
// Throws FileError naming the file and the reason ("no space left on device writing ...").
void writeSafetensors(const std::string& path, const std::vector<TensorData>& tensors,
                      const TensorMetadata& metadata = {});
// The first half of that, for writers of several files that rename them together: writes and
// fsyncs `tmp` only. On a failure `tmp` is removed and the FileError names `path`.
void writeSafetensorsTemporary(const std::string& path, const std::string& tmp,
                               const std::vector<TensorData>& tensors, const TensorMetadata& metadata);

} // namespace parallax
