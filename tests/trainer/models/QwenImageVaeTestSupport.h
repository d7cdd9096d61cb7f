#pragma once

// What the tests of Qwen-Image's VAE share: tiny VAE folders written by the reference's
// make_tiny_qwen_image_vae.py and runs of run_qwen_image_vae.py (Debian's python3-torch); they skip
// with a message where that interpreter has no torch.

#include "core/formats/SafetensorsFile.h"
#include "core/formats/SafetensorsWriter.h"
#include "tests/support/Process.h"
#include "tests/trainer/support/ReferencePython.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <map>
#include <string>
#include <vector>

namespace parallax::testing {

class QwenImageVaeTest : public ::testing::Test {
protected:
    void SetUp() override {
        if (!referenceAvailable()) GTEST_SKIP() << kReferencePython << " cannot import torch: apt-get install python3-torch";
    }

    // A tiny random VAE folder (config.json, diffusion_pytorch_model.safetensors) under the scratch
    // folder; `extra`: make_tiny_qwen_image_vae.py's options (--pipeline, --dtype BF16, ...).
    std::string makeVae(const std::string& name, const std::vector<std::string>& extra = {}) {
        const std::string folder = dir.path() + "/" + name;
        std::vector<std::string> args = {kReferencePython, referenceScript("make_tiny_qwen_image_vae.py"), folder};
        args.insert(args.end(), extra.begin(), extra.end());
        const ProcessResult made = runProcess(args);
        EXPECT_EQ(made.exitCode, 0) << made.output;
        return folder;
    }

    // run_qwen_image_vae.py on `inputs` (contiguous fp32 tensors by name); the reference's output file.
    std::string runReference(const std::string& folder, const std::map<std::string, torch::Tensor>& inputs,
                             bool decode) {
        std::vector<TensorData> data;
        for (const auto& [name, t] : inputs) data.push_back({name, Dtype::F32, t.sizes().vec(), t.data_ptr()});
        const std::string in = dir.path() + "/in.safetensors", out = dir.path() + "/out.safetensors";
        writeSafetensors(in, data);
        std::vector<std::string> args = {kReferencePython, referenceScript("run_qwen_image_vae.py"), folder, in, out};
        if (decode) args.push_back("--decode");
        const ProcessResult ran = runProcess(args);
        EXPECT_EQ(ran.exitCode, 0) << ran.output;
        return out;
    }

    TempDir dir;
};

// Seeded standard normal values, contiguous fp32.
inline torch::Tensor seededNormal(std::vector<int64_t> shape, uint64_t seed) {
    torch::manual_seed(seed);
    return torch::randn(shape);
}

} // namespace parallax::testing
