#pragma once

// The spec of a 4-step qwen_image LoRA run (r 4, alpha 8) on an image-caption dataset of the tests
// of this folder, written into `folder` and named by its layout.

#include "tests/trainer/support/SpecText.h"

#include <cstdint>
#include <fstream>
#include <string>

namespace parallax::testing {

struct QwenImageLoraLayout {
    int64_t microBatch = 1, dp = 1, tp = 1, pp = 1;
    bool samples = false; // [samples] every 2 steps, 2 of them, `sampleSteps` steps each
    int64_t sampleSteps = 3;
};

// Global batch 2 x micro-batch; data.max_pixels 1536, shuffled. Returns the spec file's path.
inline std::string writeQwenImageLoraSpec(const std::string& folder, const std::string& pipeline,
                                          const std::string& data, int64_t seqLen, const QwenImageLoraLayout& l) {
    TinySpec s;
    s.dp = l.dp;
    s.tp = l.tp;
    s.pp = l.pp;
    s.kind = "qwen_image";
    s.extraModel = "from = \"" + pipeline + "\"\nseq_len = " + std::to_string(seqLen);
    s.data = "latents";
    s.extraData = "path = \"" + data + "\"\nmax_pixels = 1536\nshuffle = true";
    s.finetune = "mode = \"lora\"\nlora_r = 4\nlora_alpha = 8";
    s.steps = 4;
    s.globalBatch = 2 * l.microBatch;
    s.microBatch = l.microBatch;
    const std::string path = folder + "/spec-" + std::to_string(l.microBatch) + "-" + std::to_string(l.dp) + "-" +
                             std::to_string(l.tp) + "-" + std::to_string(l.pp) + ".toml";
    std::ofstream(path) << s.toToml()
                        << (l.samples ? "\n[samples]\nevery = 2\ncount = 2\nsteps = " + std::to_string(l.sampleSteps) + "\n"
                                      : std::string());
    return path;
}

} // namespace parallax::testing
