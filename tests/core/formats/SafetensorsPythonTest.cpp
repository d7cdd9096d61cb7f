// The project's files against a second implementation of the format: safetensors_ref.py, a reader
// and writer written from the format's specification with Python's standard library only.
#include "core/formats/Checkpoint.h"
#include "core/formats/CheckpointWriter.h"
#include "core/util/Files.h"
#include "tests/core/formats/SafetensorsFiles.h"
#include "tests/support/Process.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using namespace parallax;
using namespace parallax::testing;

namespace {

std::string hex(const void* data, uint64_t size) {
    static const char* digits = "0123456789abcdef";
    std::string text;
    const auto* p = static_cast<const unsigned char*>(data);
    for (uint64_t i = 0; i < size; ++i) {
        text += digits[p[i] >> 4];
        text += digits[p[i] & 15];
    }
    return text;
}

#ifndef PARALLAX_PYTHON3
#define PARALLAX_PYTHON3 ""
#define PARALLAX_SAFETENSORS_REF ""
#endif

// Skips the test where the build found no Python 3.
#define REQUIRE_PYTHON()                                                                                \
    if (std::string(PARALLAX_PYTHON3).empty()) GTEST_SKIP() << "no Python 3 was found at configure time"

ProcessResult python(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {PARALLAX_PYTHON3, PARALLAX_SAFETENSORS_REF};
    argv.insert(argv.end(), args.begin(), args.end());
    return runProcess(argv);
}

// Every dtype with random bits, in an order that is not the file order, one name not ASCII.
struct Tensors {
    std::vector<std::string> bytes;
    std::vector<TensorData> list;
};
Tensors everyDtype(uint32_t seed) {
    std::mt19937 rng(seed);
    Tensors t;
    t.bytes.reserve(kDtypeCount);
    for (int d = kDtypeCount - 1; d >= 0; --d) {
        const auto dtype = static_cast<Dtype>(d);
        const std::vector<int64_t> shape = {int64_t(2 + d % 3), 4};
        uint64_t size = 0;
        std::string problem;
        EXPECT_TRUE(tensorByteSize(dtype, shape, size, problem)) << problem;
        t.bytes.push_back(randomBytes(size, rng));
        const std::string name = d == 5 ? "\xE6\xA8\xA1\xE5\x9E\x8B.weight" : "layers." + std::to_string(d) + ".w";
        t.list.push_back({name, dtype, shape, t.bytes.back().data()});
    }
    return t;
}

std::string specFile(const std::string& dir, const Tensors& t) {
    nlohmann::json spec = {{"metadata", {{"format", "pt"}}}, {"tensors", nlohmann::json::array()}};
    for (const TensorData& d : t.list) {
        uint64_t size = 0;
        std::string problem;
        tensorByteSize(d.dtype, d.shape, size, problem);
        spec["tensors"].push_back(
            {{"name", d.name}, {"dtype", dtypeName(d.dtype)}, {"shape", d.shape}, {"hex", hex(d.data, size)}});
    }
    const std::string path = joinPath(dir, "spec.json");
    writeBytes(path, spec.dump());
    return path;
}

constexpr uint64_t kShardBytes = 160; // a few tensors a shard

} // namespace

TEST(SafetensorsPython, AShardedCheckpointOfTheProjectReadsInPython) {
    REQUIRE_PYTHON();
    TempDir dir;
    const Tensors t = everyDtype(11);
    CheckpointWriteOptions options;
    options.maxShardBytes = kShardBytes;
    options.metadata = {{"format", "pt"}};
    const WrittenCheckpoint w = writeCheckpoint(dir.path(), t.list, options);
    ASSERT_GT(w.files.size(), 2u);
    const ProcessResult r = python({"dump", dir.path()});
    ASSERT_EQ(r.exitCode, 0) << r.output;
    const auto dump = nlohmann::json::parse(r.output);
    EXPECT_EQ(dump["total_size"], w.totalSize);
    ASSERT_EQ(dump["files"].size(), w.files.size());
    for (const auto& [name, file] : dump["files"].items()) {
        EXPECT_EQ(file["header_length"].get<uint64_t>() % 8, 0u) << name;
        EXPECT_EQ(file["metadata"], nlohmann::json({{"format", "pt"}})) << name;
    }
    const Checkpoint ours = Checkpoint::open(dir.path());
    ASSERT_EQ(dump["tensors"].size(), t.list.size());
    for (const auto& tensor : dump["tensors"]) {
        const std::string name = tensor["name"];
        const Checkpoint::Entry* e = ours.find(name);
        ASSERT_NE(e, nullptr) << name;
        const auto it = std::find_if(t.list.begin(), t.list.end(), [&](const TensorData& d) { return d.name == name; });
        EXPECT_EQ(tensor["dtype"], dtypeName(it->dtype)) << name;
        EXPECT_EQ(tensor["shape"].get<std::vector<int64_t>>(), it->shape) << name;
        EXPECT_EQ(tensor["file"], baseName(e->file->path())) << name;
        EXPECT_EQ(tensor["hex"], hex(it->data, e->tensor->byteSize())) << name;
    }
}

TEST(SafetensorsPython, ACheckpointWrittenByPythonReadsInTheProject) {
    REQUIRE_PYTHON();
    TempDir dir;
    const Tensors t = everyDtype(12);
    const std::string folder = joinPath(dir.path(), "model");
    const ProcessResult r =
        python({"write", folder, specFile(dir.path(), t), "--max-shard-size", std::to_string(kShardBytes)});
    ASSERT_EQ(r.exitCode, 0) << r.output;
    const Checkpoint c = Checkpoint::open(folder);
    ASSERT_TRUE(c.sharded());
    EXPECT_GT(c.files().size(), 2u);
    EXPECT_EQ(baseName(c.files().back()->path()),
              "model-0000" + std::to_string(c.files().size()) + "-of-0000" + std::to_string(c.files().size()) +
                  ".safetensors");
    ASSERT_EQ(c.entries().size(), t.list.size());
    for (const TensorData& d : t.list) {
        const TensorView v = c.tensor(d.name);
        EXPECT_EQ(v.dtype, d.dtype) << d.name;
        EXPECT_EQ(v.shape, d.shape) << d.name;
        EXPECT_EQ(hex(v.data, v.byteSize), hex(d.data, v.byteSize)) << d.name;
    }
    EXPECT_TRUE(c.warnings().empty());
    EXPECT_EQ(*c.index()->totalSize, static_cast<int64_t>(c.totalBytes()));
}

TEST(SafetensorsPython, TheProjectWritesTheSameBytesAsThePythonWriter) {
    REQUIRE_PYTHON();
    TempDir dir;
    const Tensors t = everyDtype(13);
    const std::string theirs = joinPath(dir.path(), "theirs"), ours = joinPath(dir.path(), "ours");
    for (const uint64_t limit : {kShardBytes, uint64_t(1) << 20}) {
        const ProcessResult r = python({"write", theirs, specFile(dir.path(), t), "--max-shard-size",
                                        std::to_string(limit)});
        ASSERT_EQ(r.exitCode, 0) << r.output;
        CheckpointWriteOptions options;
        options.maxShardBytes = limit;
        options.metadata = {{"format", "pt"}};
        writeCheckpoint(ours, t.list, options);
        const auto names = listDirectory(theirs);
        ASSERT_EQ(listDirectory(ours), names);
        for (const std::string& name : names)
            EXPECT_TRUE(readBytes(joinPath(ours, name)) == readBytes(joinPath(theirs, name))) << name;
        removeAll(theirs);
        removeAll(ours);
    }
}

TEST(SafetensorsPython, ThePythonReaderRefusesABrokenFile) {
    REQUIRE_PYTHON();
    TempDir dir;
    // A hole between the tensors: the second reader must catch it too, or it proves nothing.
    const std::string path = joinPath(dir.path(), "hole.safetensors");
    writeBytes(path, safetensorsBytes(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},)"
                                      R"("b":{"dtype":"U8","shape":[2],"data_offsets":[4,6]}})",
                                      "abcdef"));
    const ProcessResult r = python({"dump", path});
    EXPECT_EQ(r.exitCode, 1) << r.output;
    EXPECT_NE(r.output.find("not contiguous"), std::string::npos) << r.output;
}
