#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace parallax {

// A trained run as a Hugging Face folder that transformers' from_pretrained (and vLLM) load: the
// weights of a checkpoint under the published names of its kind (qwen2, qwen2_5_vl), LoRA adapters
// merged in (W + scale B A, as PEFT's merge_and_unload), in bf16 or fp32, sharded at maxShardBytes
// with model.safetensors.index.json as save_pretrained writes them; config.json and the tokenizer and
// processor files copied from the folder the run started from (model.from), which also gives the
// weights the run kept frozen (a checkpoint holds only what trained).
struct HfExportOptions {
    std::string run;            // the run's folder (spec.toml, checkpoints/)
    std::string checkpoint;     // a step_<N> folder; empty: the run's latest complete checkpoint
    std::string out;            // the folder written; must not exist or be empty
    bool bf16 = true;           // else fp32
    // A LoRA run's adapter alone (the PEFT folder written beside the checkpoint), instead of the
    // merged model; ignored for a full fine-tune, which has no adapter.
    bool adapterOnly = false;
    uint64_t maxShardBytes = 5'000'000'000;
};

struct HfExportResult {
    std::string checkpoint;     // the checkpoint exported
    int64_t tensors = 0;
    int64_t merged = 0;         // LoRA adapters merged into their weights
    bool adapter = false;       // the adapter folder was written (adapterOnly)
    bool diffusers = false;     // a diffusers model (qwen_image): its transformer folder, its adapter files
    uint64_t bytes = 0;
    std::vector<std::string> copied; // files copied from model.from
};

// A qwen_image_vae run is written as a diffusers VAE folder instead (VaeExport.h).
//
// Throws std::runtime_error naming the run, checkpoint, file or field at fault and the fix: a run of a
// look-alike kind or from a preset (no published config to copy), an `out` that holds files, a
// checkpoint that does not verify. `progress` gets a line per stage.
HfExportResult exportHfFolder(const HfExportOptions& options, const std::function<void(const std::string&)>& progress = {});

} // namespace parallax
