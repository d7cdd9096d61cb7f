#include "core/formats/SafetensorsFile.h"

#include "core/formats/FormatError.h"

#include <algorithm>
#include <numeric>

namespace parallax {

SafetensorsFile::SafetensorsFile(const std::string& path) : m_map(path) {
    const uint64_t size = m_map.size();
    if (size < 8)
        throw FormatError(path, "is " + std::to_string(size) +
                                    " bytes long, too short for a safetensors file (it starts with an 8-byte header "
                                    "length)");
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | m_map.data()[i]; // little-endian whatever the host
    if (n > kMaxSafetensorsHeader)
        throw FormatError(path, "claims a header of " + std::to_string(n) + " bytes; the format allows at most " +
                                    std::to_string(kMaxSafetensorsHeader) + " (is this a safetensors file?)");
    if (n > size - 8)
        throw FormatError(path, "claims a header of " + std::to_string(n) + " bytes, but only " +
                                    std::to_string(size - 8) + " bytes follow the length (truncated?)");
    m_headerSize = n;
    const std::string_view json = m_map.text().substr(8, static_cast<size_t>(n));
    m_header = parseSafetensorsHeader(json, size - 8 - n, path);
    m_byName.resize(m_header.tensors.size());
    std::iota(m_byName.begin(), m_byName.end(), size_t{0});
    const auto& tensors = m_header.tensors;
    std::sort(m_byName.begin(), m_byName.end(),
              [&](size_t a, size_t b) { return tensors[a].name < tensors[b].name; });
}

const TensorInfo* SafetensorsFile::find(const std::string& name) const {
    const auto& tensors = m_header.tensors;
    const auto it = std::lower_bound(m_byName.begin(), m_byName.end(), name,
                                     [&](size_t i, const std::string& n) { return tensors[i].name < n; });
    if (it == m_byName.end() || tensors[*it].name != name) return nullptr;
    return &tensors[*it];
}

TensorView SafetensorsFile::view(const TensorInfo& tensor) const {
    const auto* start = reinterpret_cast<const std::byte*>(m_map.data()) + dataOffset();
    return makeTensorView(tensor, path(), start, dataOffset());
}

TensorView SafetensorsFile::view(const std::string& name) const {
    const TensorInfo* t = find(name);
    if (!t) throw FormatError(path(), name, "is not in this file");
    return view(*t);
}

} // namespace parallax
