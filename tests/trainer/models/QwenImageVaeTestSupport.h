#pragma once

// What the tests of Qwen-Image's VAE share: tiny VAE folders written by the reference's
// make_tiny_qwen_image_vae.py and runs of run_qwen_image_vae.py (Debian's python3-torch, or the
// interpreter a fixture names); they skip with a message where that interpreter has no torch.

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
        if (runProcess({python, "-c", "import torch"}).exitCode != 0)
            GTEST_SKIP() << python << " cannot import torch: apt-get install python3-torch";
    }

    std::string python = kReferencePython; // the interpreter with PyTorch that runs the reference

    // A tiny random VAE folder (config.json, diffusion_pytorch_model.safetensors) under the scratch
    // folder; `extra`: make_tiny_qwen_image_vae.py's options (--pipeline, --dtype BF16, ...).
    std::string makeVae(const std::string& name, const std::vector<std::string>& extra = {}) {
        const std::string folder = dir.path() + "/" + name;
        std::vector<std::string> args = {python, referenceScript("make_tiny_qwen_image_vae.py"), folder};
        args.insert(args.end(), extra.begin(), extra.end());
        const ProcessResult made = runProcess(args);
        EXPECT_EQ(made.exitCode, 0) << made.output;
        return folder;
    }

    // run_qwen_image_vae.py on `inputs` (contiguous fp32 tensors by name); the reference's output file,
    // a new one each call (a file still mapped must not be written over).
    std::string runReference(const std::string& folder, const std::map<std::string, torch::Tensor>& inputs,
                             bool decode) {
        return runReference(folder, inputs, decode ? std::vector<std::string>{"--decode"} : std::vector<std::string>{});
    }

    // The same with run_qwen_image_vae.py's options (--train 0.1, --grads a,b, ...).
    std::string runReference(const std::string& folder, const std::map<std::string, torch::Tensor>& inputs,
                             const std::vector<std::string>& options) {
        std::vector<TensorData> data;
        for (const auto& [name, t] : inputs) data.push_back({name, Dtype::F32, t.sizes().vec(), t.data_ptr()});
        const std::string run = std::to_string(++m_runs);
        const std::string in = dir.path() + "/in" + run + ".safetensors", out = dir.path() + "/out" + run + ".safetensors";
        writeSafetensors(in, data);
        std::vector<std::string> args = {python, referenceScript("run_qwen_image_vae.py"), folder, in, out};
        args.insert(args.end(), options.begin(), options.end());
        const ProcessResult ran = runProcess(args);
        EXPECT_EQ(ran.exitCode, 0) << ran.output;
        return out;
    }

    TempDir dir;

private:
    int m_runs = 0;
};

// Seeded standard normal values, contiguous fp32.
inline torch::Tensor seededNormal(std::vector<int64_t> shape, uint64_t seed) {
    torch::manual_seed(seed);
    return torch::randn(shape);
}

} // namespace parallax::testing
