#pragma once

#include <string>

namespace parallax {

// A Qwen2.5-VL model folder near 0.5B parameters for the memory benchmark, with a conversations
// dataset: the language model of Qwen2.5-0.5B (24 layers of 896, 14 heads over 2 key/value heads,
// SwiGLU 4864, Qwen's vocabulary, the head tied to the embedding) and a tower of 8 blocks of 640
// (10 heads, SwiGLU 1728, windows of 112 pixels, full attention in blocks 3 and 7) merging into it;
// config.json in the published shape, random bf16 weights for every tensor the kind declares
// (norm scales 1, biases 0), M-RoPE sections [8, 12, 12] for its heads of 64, Qwen's tokenizer.json
// copied in. The dataset: two conversations, each one drawn 448 x 448 PNG (256 visual tokens) and
// an answer long enough that model.seq_len cuts it.
struct VlBenchFolder {
    std::string folder, jsonl;
    std::string problem; // why it could not be made ("" when it was)
};

// Writes both under `root`; `tokenizer`: Qwen's tokenizer.json.
VlBenchFolder makeVlBenchFolder(const std::string& root, const std::string& tokenizer);

} // namespace parallax
