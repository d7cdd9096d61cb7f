// A LoRA run of qwen2_5_vl exported as a Hugging Face folder (parallax-export): the reference
// (tests/reference, written from transformers' and PEFT's mathematics) loads the merged folder, and
// its logits on a batch with an image equal those of the base folder with the run's PEFT adapter.

#include "core/formats/SafetensorsFile.h"
#include "core/formats/SafetensorsWriter.h"
#include "tests/trainer/support/QwenData.h"
#include "trainer/train/Checkpoint.h"
#include "tests/trainer/support/WorkerRun.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

using namespace parallax;
using namespace parallax::testing;

namespace {

std::string exporterPath() { return buildDir() + "/app/parallax-export"; }

class HfExport : public ::testing::Test {
protected:
    void SetUp() override {
        if (!QwenData::get().problem.empty()) GTEST_SKIP() << QwenData::get().problem;
    }
    TempDir dir;
};

// input_ids with one image of a.png (35 merged units) then text, and its pixels.
void writeImageBatch(const std::string& images, const std::string& path) {
    const ProcessResult pixels = runProcess({kReferencePython, sourceDir() + "/tests/reference/image_processor.py",
                                             images + "/a.png", "-o", path + ".pixels", "--max-pixels", "50176"});
    ASSERT_EQ(pixels.exitCode, 0) << pixels.output;
    const SafetensorsFile file(path + ".pixels");
    const torch::Tensor values = readFloatTensor(file, "pixel_values");
    const torch::Tensor grid = readLongTensor(file, "image_grid_thw");
    const int64_t pads = grid.prod().item<int64_t>() / 4;
    std::vector<int64_t> ids = {151644, 872, 198, 151652};
    ids.insert(ids.end(), static_cast<size_t>(pads), 151655);
    for (int64_t t : {151653, 3838, 374, 419, 30, 151645, 198}) ids.push_back(t);
    const torch::Tensor input = torch::tensor(ids, torch::kInt64).view({1, -1});
    const torch::Tensor labels = input.masked_fill(input.eq(151655), -100); // the LoRA reference also takes a step
    writeSafetensors(path, {{"input_ids", Dtype::I64, input.sizes().vec(), input.data_ptr()},
                            {"labels", Dtype::I64, labels.sizes().vec(), labels.data_ptr()},
                            {"pixel_values", Dtype::F32, values.sizes().vec(), values.data_ptr()},
                            {"image_grid_thw", Dtype::I64, grid.sizes().vec(), grid.data_ptr()}});
}

TEST_F(HfExport, AMergedLoraRunLoadsAsTheBaseWithItsAdapter) {
    TinySpec spec = qwenConversationSpec(/*lora=*/true);
    spec.steps = 2;
    spec.checkpointEvery = 2;
    spec.lr = 1e-2; // adapters far enough from zero that a merge left out shows
    const std::string run = dir.path() + "/run";
    const WorkerRun trained = runWorker(spec.toToml(), 1, run);
    ASSERT_EQ(trained.exitCode, 0) << trained.output;
    ASSERT_TRUE(std::filesystem::exists(run + "/adapter/adapter_config.json"));

    const std::string out = dir.path() + "/exported";
    const ProcessResult exported = runProcess({exporterPath(), run, out, "--fp32", "--max-shard-size", "20MB"});
    ASSERT_EQ(exported.exitCode, 0) << exported.output;
    EXPECT_NE(exported.output.find("14 LoRA adapters merged"), std::string::npos) << exported.output;
    EXPECT_TRUE(std::filesystem::exists(out + "/model.safetensors.index.json")) << exported.output;
    for (const char* f : {"config.json", "tokenizer.json"}) EXPECT_TRUE(std::filesystem::exists(out + "/" + f)) << f;

    writeImageBatch(QwenData::get().images, dir.path() + "/batch.safetensors");
    const std::string reference = sourceDir() + "/tests/reference/run_reference.py";
    const ProcessResult adapted = runProcess({kReferencePython, reference, QwenData::get().folder,
                                              dir.path() + "/batch.safetensors", dir.path() + "/adapted.safetensors",
                                              "--lora-init", run + "/adapter"});
    ASSERT_EQ(adapted.exitCode, 0) << adapted.output;
    const ProcessResult merged = runProcess({kReferencePython, reference, out, dir.path() + "/batch.safetensors",
                                             dir.path() + "/merged.safetensors"});
    ASSERT_EQ(merged.exitCode, 0) << merged.output;
    const ProcessResult base = runProcess({kReferencePython, reference, QwenData::get().folder,
                                           dir.path() + "/batch.safetensors", dir.path() + "/base.safetensors"});
    ASSERT_EQ(base.exitCode, 0) << base.output;
    const torch::Tensor a = readFloatTensor(SafetensorsFile(dir.path() + "/adapted.safetensors"), "logits");
    const torch::Tensor m = readFloatTensor(SafetensorsFile(dir.path() + "/merged.safetensors"), "logits");
    const torch::Tensor b = readFloatTensor(SafetensorsFile(dir.path() + "/base.safetensors"), "logits");
    EXPECT_LT(relativeError(m, a), 1e-5);
    EXPECT_GT(relativeError(b, a), 1e-3) << "the adapters changed nothing: the comparison would pass without a merge";

    // The adapter alone: the PEFT folder written beside the checkpoint, as it is.
    const std::string adapterOut = dir.path() + "/adapter-only";
    const ProcessResult adapter = runProcess({exporterPath(), run, adapterOut, "--adapter-only"});
    ASSERT_EQ(adapter.exitCode, 0) << adapter.output;
    for (const char* f : {"adapter_config.json", "adapter_model.safetensors"}) {
        std::ifstream x(adapterOut + "/" + f, std::ios::binary), y(trained.lastCheckpoint() + "/adapter/" + f, std::ios::binary);
        const std::string got((std::istreambuf_iterator<char>(x)), {}), want((std::istreambuf_iterator<char>(y)), {});
        EXPECT_FALSE(want.empty()) << f;
        EXPECT_EQ(got, want) << f;
    }
}

TEST_F(HfExport, AFolderThatHoldsFilesIsRefusedByName) {
    const std::string out = dir.path() + "/taken";
    std::filesystem::create_directories(out);
    std::ofstream(out + "/keep.txt") << "mine";
    TinySpec spec = qwenConversationSpec(false);
    spec.steps = 1;
    spec.checkpointEvery = 1;
    const WorkerRun trained = runWorker(spec.toToml(), 1, dir.path() + "/run");
    ASSERT_EQ(trained.exitCode, 0) << trained.output;
    const ProcessResult refused = runProcess({exporterPath(), dir.path() + "/run", out});
    EXPECT_EQ(refused.exitCode, 1);
    EXPECT_NE(refused.output.find(out + " already holds files"), std::string::npos) << refused.output;
    EXPECT_TRUE(std::filesystem::exists(out + "/keep.txt"));
}

// A full fine-tune of a model whose head is tied to its embedding (as Qwen2.5-VL 3B): the folder
// holds the trained embedding once, no lm_head.weight, beside a config that says the head is tied;
// the reference loads it, and its logits are the trained model's, not the base's.
TEST_F(HfExport, ATiedModelIsWrittenWithItsEmbeddingOnce) {
    const std::string folder = QwenData::get().tiedFolder();
    if (folder.empty()) GTEST_SKIP() << QwenData::get().problem;
    TinySpec spec = qwenConversationSpec(/*lora=*/false, folder);
    spec.steps = 2;
    spec.checkpointEvery = 2;
    spec.lr = 1e-2;
    const std::string run = dir.path() + "/run";
    const WorkerRun trained = runWorker(spec.toToml(), 1, run);
    ASSERT_EQ(trained.exitCode, 0) << trained.output;
    const std::string out = dir.path() + "/exported";
    const ProcessResult exported = runProcess({exporterPath(), run, out, "--fp32"});
    ASSERT_EQ(exported.exitCode, 0) << exported.output;

    const SafetensorsFile written(out + "/model.safetensors");
    EXPECT_EQ(written.find("lm_head.weight"), nullptr) << "a tied head is not stored";
    const torch::Tensor embedding = readFloatTensor(written, "model.embed_tokens.weight");
    CheckpointReader reader(trained.lastCheckpoint());
    std::string source, copy;
    for (const std::string& name : reader.names("param")) {
        if (name.find(".embed_tokens.weight") != std::string::npos) source = name;
        if (name.find(".lm_head.weight") != std::string::npos) copy = name;
    }
    ASSERT_FALSE(source.empty() || copy.empty());
    EXPECT_TRUE(torch::equal(embedding, reader.full(source, "param")));
    EXPECT_TRUE(torch::equal(embedding, reader.full(copy, "param"))) << "the head's copy trained as the embedding";
    std::ifstream config(out + "/config.json");
    const std::string text((std::istreambuf_iterator<char>(config)), {});
    EXPECT_NE(text.find("\"tie_word_embeddings\": true"), std::string::npos) << text;

    writeImageBatch(QwenData::get().images, dir.path() + "/batch.safetensors");
    const std::string reference = sourceDir() + "/tests/reference/run_reference.py";
    const ProcessResult mine = runProcess({kReferencePython, reference, out, dir.path() + "/batch.safetensors",
                                           dir.path() + "/trained.safetensors"});
    ASSERT_EQ(mine.exitCode, 0) << mine.output;
    const ProcessResult base = runProcess({kReferencePython, reference, folder, dir.path() + "/batch.safetensors",
                                           dir.path() + "/base.safetensors"});
    ASSERT_EQ(base.exitCode, 0) << base.output;
    const torch::Tensor t = readFloatTensor(SafetensorsFile(dir.path() + "/trained.safetensors"), "logits");
    const torch::Tensor b = readFloatTensor(SafetensorsFile(dir.path() + "/base.safetensors"), "logits");
    EXPECT_TRUE(torch::isfinite(t).all().item<bool>());
    EXPECT_GT(relativeError(b, t), 1e-3) << "the exported folder holds the trained weights";
}

} // namespace
