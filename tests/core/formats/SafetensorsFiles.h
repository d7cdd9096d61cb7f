#pragma once

// Small files of the safetensors format, built byte by byte for the reader's tests.
#include "core/formats/FormatError.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

namespace parallax::testing {

inline std::string lengthField(uint64_t n) {
    std::string bytes(8, '\0');
    for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>(n >> (8 * i));
    return bytes;
}

// The 8-byte length (of `header`, unless `claimed` says otherwise), the header, the data.
inline std::string safetensorsBytes(const std::string& header, const std::string& data, int64_t claimed = -1) {
    return lengthField(claimed >= 0 ? uint64_t(claimed) : header.size()) + header + data;
}

inline void writeBytes(const std::string& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    ASSERT_TRUE(out.good()) << "cannot write " << path;
}

inline std::string readBytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

inline std::string randomBytes(size_t n, std::mt19937& rng) {
    std::string bytes(n, '\0');
    for (char& c : bytes) c = static_cast<char>(rng() & 0xFF);
    return bytes;
}

// A valid file of three tensors and metadata: "weight" F32 [2, 3] (bytes 0-23), "bias" F16 [3]
// (24-29), "mask" BOOL [2] (30-31).
inline std::string validHeader() {
    return R"({"__metadata__":{"format":"pt"},"weight":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},)"
           R"("bias":{"dtype":"F16","shape":[3],"data_offsets":[24,30]},)"
           R"("mask":{"dtype":"BOOL","shape":[2],"data_offsets":[30,32]}})";
}
inline std::string validData() {
    std::string data;
    for (int i = 0; i < 32; ++i) data.push_back(static_cast<char>(i * 7 + 1));
    return data;
}

} // namespace parallax::testing
