// Checkpoints as folders: the file a folder starts from, sharded writes as transformers lays them
// out, and an index that disagrees with its shards refused with the file and tensor named.
#include "core/formats/Checkpoint.h"
#include "core/formats/CheckpointWriter.h"
#include "core/util/Files.h"
#include "tests/core/formats/SafetensorsFiles.h"
#include "tests/support/Process.h"
#include "tests/trainer/train/TmpfsMount.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace parallax;
using namespace parallax::testing;

namespace {

// Tensors of 100 bytes each ("t0" ... ), to shard at a few hundred bytes.
struct Model {
    std::vector<std::string> bytes;
    std::vector<TensorData> tensors;
};
Model model(int count, int64_t elementsEach = 25) {
    Model m;
    m.bytes.reserve(count);
    for (int i = 0; i < count; ++i) {
        m.bytes.emplace_back(elementsEach * 4, static_cast<char>('a' + i));
        m.tensors.push_back({"t" + std::to_string(i), Dtype::F32, {elementsEach}, m.bytes.back().data()});
    }
    return m;
}

void expectRefused(const std::string& path, const std::string& file, const std::string& phrase,
                   const std::string& tensor = "") {
    try {
        Checkpoint::open(path);
        ADD_FAILURE() << "opened; expected: " << phrase;
    } catch (const FormatError& e) {
        EXPECT_EQ(e.file(), file) << e.what();
        EXPECT_EQ(e.tensor(), tensor) << e.what();
        EXPECT_NE(std::string(e.what()).find(phrase), std::string::npos) << e.what();
    }
}

} // namespace

TEST(CheckpointWriter, ShardsAsHuggingFaceHubDoes) {
    // huggingface_hub's own example: limit 10, sizes 6 6 2 6 2 2 -> [6] [6 2] [6 2 2].
    std::vector<std::string> bytes;
    std::vector<TensorData> tensors;
    bytes.reserve(8);
    for (int size : {6, 6, 2, 6, 2, 2}) {
        bytes.emplace_back(size, 'x');
        tensors.push_back({"t" + std::to_string(tensors.size()), Dtype::U8, {size}, bytes.back().data()});
    }
    EXPECT_EQ(planShards(tensors, 10), (std::vector<std::vector<size_t>>{{0}, {1, 2}, {3, 4, 5}}));
    // A tensor over the limit gets a shard of its own, placed before the one being filled.
    EXPECT_EQ(planShards(tensors, 5), (std::vector<std::vector<size_t>>{{0}, {1}, {3}, {2, 4}, {5}}));
    EXPECT_EQ(planShards({}, 10), (std::vector<std::vector<size_t>>{{}}));
}

TEST(CheckpointWriter, ParsesShardSizesAsTransformersWritesThem) {
    EXPECT_EQ(parseShardSize("5GB"), 5'000'000'000u);
    EXPECT_EQ(parseShardSize("500MB"), 500'000'000u);
    EXPECT_EQ(parseShardSize("2GiB"), uint64_t(2) << 30);
    EXPECT_EQ(parseShardSize("100kib"), 102'400u);
    EXPECT_EQ(parseShardSize("1000"), 1000u);
    EXPECT_EQ(parseShardSize("5 GB"), 5'000'000'000u);
    for (const char* bad : {"", "GB", "-1GB", "0.1", "5XB", "1e30GB"})
        EXPECT_THROW(parseShardSize(bad), std::invalid_argument) << bad;
}

TEST(CheckpointWriter, WritesShardsAndAnIndexAsSavePretrainedDoes) {
    TempDir dir;
    const Model m = model(5);
    CheckpointWriteOptions options;
    options.maxShardBytes = 250; // two tensors a shard
    const WrittenCheckpoint w = writeCheckpoint(dir.path(), m.tensors, options);
    EXPECT_EQ(w.files, (std::vector<std::string>{dir.path() + "/model-00001-of-00003.safetensors",
                                                 dir.path() + "/model-00002-of-00003.safetensors",
                                                 dir.path() + "/model-00003-of-00003.safetensors"}));
    EXPECT_EQ(w.index, dir.path() + "/model.safetensors.index.json");
    EXPECT_EQ(w.totalSize, 500u);
    EXPECT_EQ(readBytes(w.index), "{\n  \"metadata\": {\n    \"total_size\": 500\n  },\n  \"weight_map\": {\n"
                                  "    \"t0\": \"model-00001-of-00003.safetensors\",\n"
                                  "    \"t1\": \"model-00001-of-00003.safetensors\",\n"
                                  "    \"t2\": \"model-00002-of-00003.safetensors\",\n"
                                  "    \"t3\": \"model-00002-of-00003.safetensors\",\n"
                                  "    \"t4\": \"model-00003-of-00003.safetensors\"\n  }\n}\n");
    const Checkpoint c = Checkpoint::open(dir.path());
    EXPECT_TRUE(c.sharded());
    EXPECT_EQ(c.source(), w.index);
    EXPECT_EQ(c.files().size(), 3u);
    EXPECT_EQ(c.entries().size(), 5u);
    EXPECT_EQ(c.totalBytes(), 500u);
    EXPECT_EQ(c.parameterCount(), 125);
    EXPECT_TRUE(c.warnings().empty());
    const TensorView t3 = c.tensor("t3");
    EXPECT_EQ(*t3.path, dir.path() + "/model-00002-of-00003.safetensors");
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(t3.data), t3.byteSize), m.bytes[3]);
    EXPECT_EQ(c.files()[0]->metadata(), (TensorMetadata{{"format", "pt"}})); // as transformers requires
}

TEST(CheckpointWriter, ASmallerSaveRemovesTheShardsOfTheLargerOne) {
    TempDir dir;
    const Model m = model(5);
    CheckpointWriteOptions options;
    options.maxShardBytes = 250;
    writeCheckpoint(dir.path(), m.tensors, options);
    writeBytes(dir.path() + "/config.json", "{}");
    options.maxShardBytes = 1000;
    const WrittenCheckpoint single = writeCheckpoint(dir.path(), m.tensors, options);
    EXPECT_EQ(single.files, std::vector<std::string>{dir.path() + "/model.safetensors"});
    EXPECT_EQ(single.index, "");
    EXPECT_EQ(listDirectory(dir.path()), (std::vector<std::string>{"config.json", "model.safetensors"}));
    options.maxShardBytes = 450;
    writeCheckpoint(dir.path(), m.tensors, options);
    EXPECT_EQ(listDirectory(dir.path()),
              (std::vector<std::string>{"config.json", "model-00001-of-00002.safetensors",
                                        "model-00002-of-00002.safetensors", "model.safetensors.index.json"}));
    EXPECT_EQ(Checkpoint::open(dir.path()).files().size(), 2u);
}

TEST(CheckpointWriter, AFullDiskNamesTheShardAndLeavesNoTemporaries) {
    TempDir dir;
    TmpfsMount disk(dir.path() + "/disk", 256 << 10);
    if (!disk.mounted()) GTEST_SKIP() << disk.error();
    const Model small = model(2);
    writeCheckpoint(disk.path(), small.tensors);
    const Model big = model(6, 25'000); // 100 KB each: the third shard does not fit
    CheckpointWriteOptions options;
    options.maxShardBytes = 100'000;
    try {
        writeCheckpoint(disk.path(), big.tensors, options);
        FAIL() << "600 KB fitted on a 256 KiB disk";
    } catch (const FileError& e) {
        EXPECT_NE(std::string(e.what()).find("no space left on device writing"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find(disk.path() + "/model-0000"), std::string::npos) << e.what();
    }
    EXPECT_EQ(listDirectory(disk.path()), std::vector<std::string>{"model.safetensors"});
    EXPECT_EQ(Checkpoint::open(disk.path()).entries().size(), 2u);
}

TEST(Checkpoint, FindsTheFileAFolderStartsFrom) {
    TempDir dir;
    const Model m = model(2);
    writeSafetensors(dir.path() + "/diffusion_pytorch_model.safetensors", m.tensors);
    EXPECT_EQ(Checkpoint::locate(dir.path()), dir.path() + "/diffusion_pytorch_model.safetensors");
    writeSafetensors(dir.path() + "/other.safetensors", m.tensors);
    expectRefused(dir.path(), dir.path(), "holds several .safetensors files");
    writeSafetensors(dir.path() + "/model.safetensors", m.tensors);
    EXPECT_EQ(Checkpoint::locate(dir.path()), dir.path() + "/model.safetensors");
    const Checkpoint c = Checkpoint::open(dir.path() + "/other.safetensors");
    EXPECT_FALSE(c.sharded());
    EXPECT_EQ(c.entries().size(), 2u);
    TempDir empty;
    expectRefused(empty.path(), empty.path(), "holds no model.safetensors");
    EXPECT_FALSE(Checkpoint::present(empty.path()));
    expectRefused(empty.path() + "/missing", empty.path() + "/missing", "cannot open it: no such file");
}

TEST(Checkpoint, RefusesAnIndexThatDisagreesWithItsShards) {
    TempDir dir;
    const Model m = model(4);
    CheckpointWriteOptions options;
    options.maxShardBytes = 250;
    const WrittenCheckpoint w = writeCheckpoint(dir.path(), m.tensors, options);
    const std::string index = w.index;
    const std::string good = readBytes(index);
    const std::string s1 = "model-00001-of-00002.safetensors", s2 = "model-00002-of-00002.safetensors";
    auto withMap = [&](const std::string& map) {
        writeBytes(index, "{\"metadata\":{\"total_size\":400},\"weight_map\":{" + map + "}}");
    };
    withMap("\"t0\":\"" + s1 + "\",\"t1\":\"" + s2 + "\",\"t2\":\"" + s2 + "\",\"t3\":\"" + s2 + "\"");
    expectRefused(dir.path(), index, "puts it in " + s2 + ", which does not hold it; " + s1 + " holds it", "t1");
    withMap("\"t0\":\"" + s1 + "\",\"t2\":\"" + s2 + "\",\"t3\":\"" + s2 + "\"");
    expectRefused(dir.path(), dir.path() + "/" + s1, "is in this shard, but the weight map", "t1");
    withMap("\"t0\":\"" + s1 + "\",\"t1\":\"" + s1 + "\",\"t2\":\"model-00003-of-00003.safetensors\"");
    expectRefused(dir.path(), index, "names the shard model-00003-of-00003.safetensors, which is missing");
    withMap("\"t0\":\"../" + s1 + "\"");
    expectRefused(dir.path(), index, "not a plain file name", "t0");
    withMap("\"t0\":\"pytorch_model-00001-of-00002.bin\"");
    expectRefused(dir.path(), index, "not a .safetensors file", "t0");
    withMap("\"t0\":\"" + s1 + "\",\"t0\":\"" + s1 + "\"");
    expectRefused(dir.path(), index, "appears twice in the weight map", "t0");
    withMap("");
    expectRefused(dir.path(), index, "lists no tensor");
    writeBytes(index, "{\"metadata\":{\"total_size\":400}}");
    expectRefused(dir.path(), index, "has no \"weight_map\"");
    writeBytes(index, "[]");
    expectRefused(dir.path(), index, "the index is an array");
    writeBytes(index, "{\"metadata\":" + std::string(100000, '[') + "}");
    expectRefused(dir.path(), index, "\"metadata\" is an array");
    writeBytes(index, "{\"metadata\":{\"x\":" + std::string(100000, '[') + "}}");
    expectRefused(dir.path(), index, "nested deeper than 64 levels");
    writeBytes(index, "{\"weight_map\":{\"t0\":3}}");
    expectRefused(dir.path(), index, "gives a number where the name of its shard file belongs", "t0");

    // A tensor in two shards: a copy of shard 1 under shard 2's name holds t0 and t1 as well.
    writeBytes(index, good);
    const std::string second = readBytes(dir.path() + "/" + s2);
    writeSafetensors(dir.path() + "/" + s2, {m.tensors[1], m.tensors[2], m.tensors[3]});
    expectRefused(dir.path(), dir.path() + "/" + s2, "is in this shard and in " + dir.path() + "/" + s1, "t1");
    // A broken shard is named as such.
    writeBytes(dir.path() + "/" + s2, second.substr(0, second.size() - 1));
    expectRefused(dir.path(), dir.path() + "/" + s2, "whose data holds 199 bytes (truncated?)", "t3");
    writeBytes(dir.path() + "/" + s2, second);
    // Shards the map does not name are not guessed at; a total_size that disagrees is a warning.
    writeBytes(dir.path() + "/model-00003-of-00003.safetensors", "stale");
    writeBytes(index, "{\"metadata\":{\"total_size\":999,\"total_parameters\":1},\"weight_map\":{\"t0\":\"" + s1 +
                          "\",\"t1\":\"" + s1 + "\",\"t2\":\"" + s2 + "\",\"t3\":\"" + s2 + "\"}}");
    const Checkpoint c = Checkpoint::open(dir.path());
    EXPECT_EQ(c.files().size(), 2u);
    ASSERT_EQ(c.warnings().size(), 1u);
    EXPECT_NE(c.warnings()[0].find("total_size is 999 bytes, but the shards' tensors hold 400"), std::string::npos);
}
