#pragma once

#include "trainer/data/Dataset.h"

#include <memory>
#include <string>
#include <vector>

namespace parallax {

class SafetensorsFile;

// In a shard's metadata, "<name>" + this holds the text of sample <name>'s prompt (optional).
inline constexpr const char* kPromptText = ".prompt";
struct TensorInfo;

// data.kind = "latents": samples already encoded for a latent model (qwen_image) by a VAE and a text
// encoder: a folder of .safetensors shards, each holding per sample "<name>.latents"
// (channels, H, W; the VAE's normalized latents, H and W even) and "<name>.prompt_embeds" (tokens,
// text_dim; the text encoder's states, template dropped), F32, BF16 or F16, and for an Edit sample
// "<name>.reference.0", "<name>.reference.1", ... (channels, h, w; its reference images' latents,
// numbered from 0 without a gap). Samples are numbered
// in file-name order, and within a file in name order. Every shard's header is checked when the
// dataset opens (a tensor missing its partner, a wrong rank, channel count or width is an error
// naming the file and the sample); values are read from the mapped files only when batched.
class LatentCacheDataset : public Dataset {
public:
    LatentCacheDataset(const std::string& folder, const ModelDims& dims, uint64_t seed);
    // Whether `folder` is a folder holding any *.safetensors shard (what this dataset reads).
    static bool holdsShards(const std::string& folder);
    ~LatentCacheDataset() override;

    int64_t size() const override { return static_cast<int64_t>(m_samples.size()); }
    Batch makeBatch(const std::vector<int64_t>& indices, int64_t step) const override;
    std::string describe() const override;
    // The latents' size (H, W) and the reference images' sizes, one id each: a micro-batch holds one.
    std::vector<int64_t> sampleGroups() const override;
    // The caption `parallax-cli cache` encoded it from ("<name>.prompt" in its shard's metadata).
    std::string promptText(int64_t index) const override;
    // The texts of samples whose shard keeps none (a cache made before shards kept them), from the
    // dataset it was made from, sample i's at texts[i].
    void fillPromptTexts(const std::vector<std::string>& texts);

private:
    struct Entry {
        size_t file;
        const TensorInfo* latents;
        const TensorInfo* prompt;
        std::string text; // the prompt's text, where the shard's metadata holds it
        std::vector<const TensorInfo*> references;
    };
    void addFile(const std::string& path);

    std::string m_folder;
    ModelDims m_dims;
    uint64_t m_seed;
    std::vector<std::unique_ptr<SafetensorsFile>> m_files;
    std::vector<Entry> m_samples;
};

} // namespace parallax
