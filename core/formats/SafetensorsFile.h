#pragma once

#include "core/formats/MappedFile.h"
#include "core/formats/SafetensorsHeader.h"
#include "core/formats/TensorView.h"

#include <string>
#include <vector>

namespace parallax {

// One .safetensors file, mapped read-only and checked against every rule of the format when
// opened (SafetensorsHeader.h); its tensors are handed out as views into the mapping, never copied.
// Opening reads the 8-byte length and the header only: a header that claims more than the file
// holds, or more than the format allows, is refused before anything of that size is touched.
class SafetensorsFile {
public:
    // Throws FormatError naming the file, and the tensor at fault where there is one.
    explicit SafetensorsFile(const std::string& path);
    // Views point into this object (its path, its tensors), so it stays where it was made.
    SafetensorsFile(const SafetensorsFile&) = delete;
    SafetensorsFile& operator=(const SafetensorsFile&) = delete;

    const std::string& path() const { return m_map.path(); }
    uint64_t fileSize() const { return m_map.size(); }
    uint64_t headerSize() const { return m_headerSize; }   // the JSON, without the 8-byte length
    uint64_t dataOffset() const { return 8 + m_headerSize; } // where the tensors' bytes start
    const std::vector<TensorInfo>& tensors() const { return m_header.tensors; } // by offset
    const TensorMetadata& metadata() const { return m_header.metadata; }

    const TensorInfo* find(const std::string& name) const; // nullptr when absent
    TensorView view(const TensorInfo& tensor) const;       // `tensor` must be one of tensors()
    TensorView view(const std::string& name) const;        // throws FormatError when absent

private:
    MappedFile m_map;
    uint64_t m_headerSize = 0;
    SafetensorsHeader m_header;
    std::vector<size_t> m_byName; // indices into m_header.tensors, sorted by name
};

} // namespace parallax
