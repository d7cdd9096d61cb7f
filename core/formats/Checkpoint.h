#pragma once

#include "core/formats/SafetensorsFile.h"
#include "core/formats/SafetensorsIndex.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace parallax {

// The weights of a model as Hugging Face's tools save them: one .safetensors file, or shards named
// by a *.safetensors.index.json. Opening a sharded checkpoint opens and checks every shard the
// weight map names (never a guessed count) and checks that every tensor of the map is in its shard
// and in no other, and that no shard holds a tensor the map does not list.
class Checkpoint {
public:
    struct Entry {
        const SafetensorsFile* file = nullptr;
        const TensorInfo* tensor = nullptr;
    };

    // `path` is a .safetensors file, an index (*.safetensors.index.json), or a folder holding
    // model.safetensors.index.json or model.safetensors, or else exactly one *.safetensors.index.json
    // or one *.safetensors file (diffusers' diffusion_pytorch_model.safetensors). Throws FormatError.
    static Checkpoint open(const std::string& path);
    // The file a folder's checkpoint starts from (index or single file), by the rule above; throws
    // FormatError naming the folder when it has none or several.
    static std::string locate(const std::string& folder);
    // Whether `folder` holds a checkpoint that locate() would find.
    static bool present(const std::string& folder);

    const std::string& source() const { return m_source; } // the file or index opened
    bool sharded() const { return m_index.has_value(); }
    const std::optional<SafetensorsIndex>& index() const { return m_index; }
    const std::vector<std::unique_ptr<SafetensorsFile>>& files() const { return m_files; }

    const std::vector<Entry>& entries() const { return m_entries; } // sorted by name
    const Entry* find(const std::string& name) const;               // nullptr when absent
    TensorView tensor(const std::string& name) const;               // throws FormatError when absent

    uint64_t totalBytes() const;      // of the tensors' data
    int64_t parameterCount() const;   // elements of every tensor
    // Things that do not stop the checkpoint from loading, e.g. an index whose total_size differs
    // from the bytes its shards hold (some published models carry one from before a conversion).
    const std::vector<std::string>& warnings() const { return m_warnings; }

private:
    void openShards(const std::string& folder);
    std::string m_source;
    std::optional<SafetensorsIndex> m_index;
    std::vector<std::unique_ptr<SafetensorsFile>> m_files;
    std::vector<Entry> m_entries;
    std::vector<std::string> m_warnings;
};

} // namespace parallax
