// qwen_image started from a diffusers pipeline folder (the reference's tiny transformer) and trained
// on a latent cache of an odd packed grid (3 x 5) with prompts of several lengths: each layout
// trains the same losses and weights as one process, fully and with LoRA on DiffSynth's targets,
// and the adapter lands in PEFT's, diffusers' and ComfyUI's layouts.

#include "core/formats/SafetensorsFile.h"
#include "core/formats/SafetensorsWriter.h"
#include "tests/trainer/support/CheckpointCompare.h"
#include "tests/trainer/support/ReferencePython.h"
#include "tests/trainer/support/SpecText.h"
#include "tests/trainer/support/WorkerRun.h"
#include "trainer/export/HfExport.h"

#include <gtest/gtest.h>

#include <filesystem>

using namespace parallax;
using namespace parallax::testing;

namespace {

// The folder and the cache, made once for every test of the binary.
class QwenImageData {
public:
    static QwenImageData& get() {
        static QwenImageData data;
        return data;
    }
    std::string problem, folder, cache;

private:
    QwenImageData() {
        if (!referenceAvailable()) {
            problem = std::string(kReferencePython) + " cannot import torch: apt-get install python3-torch";
            return;
        }
        folder = m_dir.path() + "/qwen-image";
        const ProcessResult made = runProcess(
            {kReferencePython, referenceScript("make_tiny_qwen_image.py"), folder, "--pipeline"});
        if (made.exitCode != 0) {
            problem = "make_tiny_qwen_image.py failed: " + made.output;
            return;
        }
        // Eight samples in two shards: latents 16 x 6 x 10, prompts of 3 to 10 states of 48.
        cache = m_dir.path() + "/latents";
        std::filesystem::create_directories(cache);
        torch::manual_seed(3);
        for (int shard = 0; shard < 2; ++shard) {
            std::vector<torch::Tensor> keep;
            std::vector<TensorData> tensors;
            for (int i = 0; i < 4; ++i) {
                const std::string name = "img" + std::to_string(shard * 4 + i);
                keep.push_back(torch::randn({16, 6, 10}));
                tensors.push_back({name + ".latents", Dtype::F32, {16, 6, 10}, keep.back().data_ptr()});
                const int64_t tokens = 3 + shard * 4 + i;
                keep.push_back(torch::randn({tokens, 48}));
                tensors.push_back({name + ".prompt_embeds", Dtype::F32, {tokens, 48}, keep.back().data_ptr()});
            }
            writeSafetensors(cache + "/shard-" + std::to_string(shard) + ".safetensors", tensors);
        }
    }
    TempDir m_dir;
};

struct ImageLayout {
    const char* name;
    int64_t dp, tp, pp, zero;
    bool lora;
};

void PrintTo(const ImageLayout& layout, std::ostream* os) { *os << layout.name; }

TinySpec imageSpec(const ImageLayout& layout) {
    const QwenImageData& data = QwenImageData::get();
    TinySpec s;
    s.kind = "qwen_image";
    s.extraModel = "from = \"" + data.folder + "\"\nseq_len = 8";
    s.data = "latents";
    s.extraData = "path = \"" + data.cache + "\"\nshuffle = false";
    s.finetune = layout.lora ? "mode = \"lora\"\nlora_r = 4\nlora_alpha = 8" : "mode = \"full\"";
    s.steps = 4;
    s.globalBatch = 4;
    s.microBatch = 1;
    s.checkpointEvery = 4;
    s.dp = layout.dp;
    s.tp = layout.tp;
    s.pp = layout.pp;
    s.zero = layout.zero;
    return s;
}

class QwenImageFolder : public ::testing::TestWithParam<ImageLayout> {
protected:
    void SetUp() override {
        if (!QwenImageData::get().problem.empty()) GTEST_SKIP() << QwenImageData::get().problem;
    }
};

TEST_P(QwenImageFolder, SameLossesAndWeightsAsOneProcess) {
    const ImageLayout& layout = GetParam();
    const WorkerRun& one = runOnce(layout.lora ? "one-lora" : "one-full", [&](const std::string& dir) {
        return runWorker(imageSpec({"one", 1, 1, 1, 0, layout.lora}).toToml(), 1, dir);
    });
    ASSERT_EQ(one.exitCode, 0) << one.output;
    ASSERT_EQ(one.losses().size(), 4u) << one.output;
    EXPECT_NE(one.output.find("latents: 8 samples in 2 shards"), std::string::npos) << one.output;
    TempDir tmp;
    const WorkerRun many = runWorker(imageSpec(layout).toToml(), static_cast<int>(layout.dp * layout.tp * layout.pp),
                                     tmp.path() + "/run");
    ASSERT_EQ(many.exitCode, 0) << many.output;
    ASSERT_EQ(many.losses().size(), 4u) << many.output;
    EXPECT_LT(maxRelativeDifference(one.losses(), many.losses()), 1e-5);
    const WeightsDifference param = weightsDifference(one.lastCheckpoint(), many.lastCheckpoint(), "param");
    EXPECT_LT(param.relative, layout.lora ? 1e-4 : 1e-5) << param.where;
    if (!layout.lora) return;
    // The adapter in diffusers' and ComfyUI's layouts beside PEFT's: 12 targets in each of 2 blocks.
    const SafetensorsFile diffusers(many.runDir + "/adapter/pytorch_lora_weights.safetensors");
    const SafetensorsFile comfy(many.runDir + "/adapter/lora_comfyui.safetensors");
    EXPECT_EQ(diffusers.tensors().size(), 48u);
    EXPECT_EQ(comfy.tensors().size(), 72u) << "lora_A, lora_B and ComfyUI's alpha for each of the 24";
    EXPECT_NE(comfy.find("diffusion_model.transformer_blocks.0.attn.to_q.alpha"), nullptr);
    EXPECT_NE(diffusers.find("transformer.transformer_blocks.1.attn.to_add_out.lora_B.weight"), nullptr);
    EXPECT_NE(diffusers.find("transformer.transformer_blocks.0.img_mod.1.lora_A.weight"), nullptr);
    EXPECT_NE(comfy.find("diffusion_model.transformer_blocks.0.txt_mlp.net.2.lora_A.weight"), nullptr);
    const TensorInfo* a = diffusers.find("transformer.transformer_blocks.0.attn.to_q.lora_A.weight");
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->shape, (std::vector<int64_t>{4, 64}));
}

// A LoRA run exported both ways: its adapter folder holds the diffusers and ComfyUI files, and the
// merged transformer folder is what the independent reference computes from the base folder and the
// exported diffusers LoRA file (W + alpha / r B A for every adapted Linear), and it loads there as a
// QwenImageTransformer2DModel folder (config.json copied from the pipeline's transformer/).
TEST_F(QwenImageFolder, ALoraRunExportsItsAdapterAndTheMergedTransformer) {
    const QwenImageData& data = QwenImageData::get();
    const WorkerRun& run = runOnce("one-lora", [&](const std::string& dir) {
        return runWorker(imageSpec({"one", 1, 1, 1, 0, true}).toToml(), 1, dir);
    });
    ASSERT_EQ(run.exitCode, 0) << run.output;
    TempDir out;
    HfExportOptions o;
    o.run = run.runDir;
    o.out = out.path() + "/adapter";
    o.adapterOnly = true;
    ASSERT_TRUE(exportHfFolder(o, {}).adapter);
    for (const char* file : {"adapter_config.json", "adapter_model.safetensors", "pytorch_lora_weights.safetensors",
                             "lora_comfyui.safetensors"})
        EXPECT_TRUE(std::filesystem::exists(o.out + "/" + file)) << file;
    o.out = out.path() + "/merged";
    o.adapterOnly = false;
    o.bf16 = false;
    const HfExportResult merged = exportHfFolder(o, {});
    EXPECT_EQ(merged.merged, 24);
    EXPECT_TRUE(std::filesystem::exists(o.out + "/diffusion_pytorch_model.safetensors"));
    const std::string check = R"(
import sys
sys.path.insert(0, sys.argv[1])
import qwen_image, safetensors_io
base = qwen_image.load_model(sys.argv[2]).params
merged = qwen_image.load_model(sys.argv[3]).params
lora = safetensors_io.load(sys.argv[4])
worst, adapted = 0.0, 0
for name, w in base.items():
    a = lora.get("transformer." + name[:-len(".weight")] + ".lora_A.weight")
    want = w + (8 / 4) * lora["transformer." + name[:-len(".weight")] + ".lora_B.weight"] @ a if a is not None else w
    adapted += a is not None
    worst = max(worst, (merged[name] - want).abs().max().item())
print(adapted, worst)
sys.exit(0 if adapted == 24 and worst < 1e-5 else 1)
)";
    const ProcessResult checked = runProcess({kReferencePython, "-c", check, sourceDir() + "/tests/reference", data.folder,
                                              o.out, out.path() + "/adapter/pytorch_lora_weights.safetensors"});
    EXPECT_EQ(checked.exitCode, 0) << checked.output;
}

// Data, tensor and pipeline parallelism and ZeRO-3, fully and under LoRA, with the last block's
// text stream leaving parameters without a gradient in every one.
const ImageLayout kImageLayouts[] = {
    {"dp2_zero3_full", 2, 1, 1, 3, false},
    {"tp2_pp2_full", 1, 2, 2, 0, false},
    {"dp2_tp2_lora", 2, 2, 1, 0, true},
};

INSTANTIATE_TEST_SUITE_P(Layouts, QwenImageFolder, ::testing::ValuesIn(kImageLayouts),
                         [](const auto& info) { return std::string(info.param.name); });

} // namespace
