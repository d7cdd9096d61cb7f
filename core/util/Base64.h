#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace parallax {

// RFC 4648 base64 with padding: how binary (a sample's PNG) travels in a telemetry line and the store.
std::string base64Encode(const uint8_t* data, size_t size);
inline std::string base64Encode(const std::vector<uint8_t>& bytes) { return base64Encode(bytes.data(), bytes.size()); }

// The bytes of `text`, or nullopt where it is not base64 (a character outside the alphabet, a
// length that is not a multiple of 4, padding anywhere but at the end).
std::optional<std::vector<uint8_t>> base64Decode(std::string_view text);

} // namespace parallax
