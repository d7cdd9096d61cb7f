#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace parallax {

// A whole file mapped read-only. Nothing is read until a page is touched, so a rank that uses a
// slice of a large checkpoint brings only that slice into memory. The file must stay as it is while
// it is mapped: one truncated meanwhile faults (SIGBUS) where its missing pages are touched.
class MappedFile {
public:
    // Throws FormatError naming the file: missing, unreadable, not a regular file, or not mappable.
    explicit MappedFile(const std::string& path);
    ~MappedFile();
    MappedFile(MappedFile&& other) noexcept;
    MappedFile& operator=(MappedFile&& other) noexcept;
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

    const std::string& path() const { return m_path; }
    const unsigned char* data() const { return m_data; } // nullptr for an empty file
    uint64_t size() const { return m_size; }
    std::string_view text() const { return {reinterpret_cast<const char*>(m_data), static_cast<size_t>(m_size)}; }

private:
    void release();
    std::string m_path;
    const unsigned char* m_data = nullptr;
    uint64_t m_size = 0;
};

} // namespace parallax
