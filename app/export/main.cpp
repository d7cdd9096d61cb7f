// parallax-export: a trained qwen2 / qwen2_5_vl run as a Hugging Face folder (trainer/export).
//   parallax-export RUN_DIR OUT [--checkpoint STEP_DIR] [--fp32] [--max-shard-size 5GB] [--adapter-only]
// `parallax-cli export RUN OUT` finds the run's folder in the store and runs this.

#include "core/util/BuildId.h"
#include "core/formats/CheckpointWriter.h"
#include "trainer/export/HfExport.h"

#include <CLI/CLI.hpp>

#include <iostream>

int main(int argc, char** argv) {
    using namespace parallax;
    HfExportOptions o;
    bool fp32 = false;
    std::string shard = "5GB";
    CLI::App app{"parallax-export: a trained qwen2 / qwen2_5_vl run as a Hugging Face folder"};
    app.add_option("run", o.run, "The run's folder (spec.toml, checkpoints/)")->required();
    app.add_option("out", o.out, "The folder to write (new or empty)")->required();
    app.add_option("--checkpoint", o.checkpoint, "A step_<N> folder (default: the latest complete one)");
    app.add_flag("--fp32", fp32, "Write fp32 weights (default: bf16, as the published models are stored)");
    app.add_option("--max-shard-size", shard, "Largest file before the weights are sharded (default 5GB)");
    app.add_flag("--adapter-only", o.adapterOnly, "A LoRA run's PEFT adapter folder instead of the merged model");
    app.set_version_flag("--version", versionLine("parallax-export"));
    CLI11_PARSE(app, argc, argv);
    try {
        o.bf16 = !fp32;
        o.maxShardBytes = parseShardSize(shard);
        const HfExportResult r = exportHfFolder(o, [](const std::string& line) { std::cout << line << std::endl; });
        if (r.adapter) {
            std::cout << o.out << ": the LoRA adapter; load it with PEFT's PeftModel.from_pretrained"
                      << (r.diffusers ? " (or pytorch_lora_weights.safetensors with diffusers' load_lora_weights, "
                                        "lora_comfyui.safetensors in ComfyUI)"
                                      : "")
                      << std::endl;
            return 0;
        }
        std::cout << o.out << ": " << r.tensors << " tensors";
        if (r.merged) std::cout << ", " << r.merged << " LoRA adapters merged";
        std::cout << (r.diffusers ? "; load it with diffusers' QwenImageTransformer2DModel.from_pretrained"
                                  : "; load it with transformers' from_pretrained")
                  << std::endl;
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "parallax-export: " << e.what() << std::endl;
        return 1;
    }
}
