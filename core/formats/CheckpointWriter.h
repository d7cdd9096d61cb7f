#pragma once

#include "core/formats/SafetensorsWriter.h"

#include <cstdint>
#include <string>
#include <vector>

namespace parallax {

struct CheckpointWriteOptions {
    uint64_t maxShardBytes = 5'000'000'000; // transformers' default, "5GB"
    std::string prefix = "model";           // model.safetensors, model-00001-of-00003.safetensors
    // Each file's __metadata__. transformers refuses a file whose __metadata__ has no "format" of
    // "pt" (or "tf", "flax", "mlx"), so keep it when adding entries.
    TensorMetadata metadata = {{"format", "pt"}};
};

struct WrittenCheckpoint {
    std::vector<std::string> files; // the .safetensors files, in shard order
    std::string index;              // "" when there is one file
    uint64_t totalSize = 0;         // bytes of the tensors' data
};

// Splits `tensors` into shards as Hugging Face's tools do: in the order given, a shard ends when the
// next tensor would take it past maxShardBytes, and a tensor larger than that gets a shard of its
// own. Returns each shard's tensor indices.
std::vector<std::vector<size_t>> planShards(const std::vector<TensorData>& tensors, uint64_t maxShardBytes);

// Writes `tensors` into `folder` as transformers' save_pretrained does: <prefix>.safetensors when
// they fit one shard, else <prefix>-00001-of-0000N.safetensors and <prefix>.safetensors.index.json
// with metadata.total_size and the weight map (keys sorted, indent 2). Every file goes through a
// temporary file and a rename (the index last), then the folder is synced; the files of an earlier
// checkpoint of the same prefix that this one does not use are removed afterwards. Throws FileError
// naming the file that could not be written, or std::invalid_argument naming a bad tensor.
WrittenCheckpoint writeCheckpoint(const std::string& folder, const std::vector<TensorData>& tensors,
                                  const CheckpointWriteOptions& options = {});

// A shard size as transformers and huggingface_hub write it: "5GB" (10^9), "500MB", "2GiB" (2^30),
// "100KiB", or a number of bytes. Throws std::invalid_argument naming the text otherwise.
uint64_t parseShardSize(const std::string& text);

} // namespace parallax
