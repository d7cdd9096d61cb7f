#pragma once

#include <cstring>

// Fixed-width fields of the store's packed chunk blobs (metric and span chunks). x86-64 and aarch64
// are little-endian; the store is read where it is written.
namespace parallax::packed {

template <class T>
inline char* put(char* at, T v) {
    std::memcpy(at, &v, sizeof(T));
    return at + sizeof(T);
}

template <class T>
inline T get(const unsigned char* p) {
    T v;
    std::memcpy(&v, p, sizeof(T));
    return v;
}

} // namespace parallax::packed
