#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace parallax {

// The index of a sharded checkpoint (model.safetensors.index.json, as transformers and diffusers
// write it): {"metadata": {"total_size": N, ...}, "weight_map": {tensor: shard file, ...}}.
struct SafetensorsIndex {
    std::string path;
    std::optional<int64_t> totalSize;                           // metadata.total_size, when given
    std::vector<std::pair<std::string, std::string>> weightMap; // tensor -> shard, in the file's order
    std::vector<std::string> shards() const;                    // the distinct shard files, sorted
};

// The index file's largest size accepted: far above any published model's (a few hundred KiB).
constexpr uint64_t kMaxIndexBytes = 100'000'000;

// Reads and checks an index: a JSON object with a non-empty `weight_map` of tensor names to shard
// file names (plain names of .safetensors files in the index's folder, no path), no tensor twice.
// Throws FormatError naming the file (and the tensor at fault).
SafetensorsIndex readSafetensorsIndex(const std::string& path);

} // namespace parallax
