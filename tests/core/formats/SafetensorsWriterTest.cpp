// The writer: every dtype read back bit for bit, the header laid out as Hugging Face's writer lays
// it out, atomic replacement, and a full disk named.
#include "core/formats/SafetensorsFile.h"
#include "core/formats/SafetensorsWriter.h"
#include "core/util/Files.h"
#include "tests/core/formats/SafetensorsFiles.h"
#include "tests/support/Process.h"
#include "tests/trainer/train/TmpfsMount.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace parallax;
using namespace parallax::testing;

namespace {

// A tensor of `dtype` with `rows` x 6 elements of random bits (NaN payloads and all).
struct Owned {
    std::string bytes;
    TensorData data;
};
Owned randomTensor(const std::string& name, Dtype dtype, int64_t rows, std::mt19937& rng) {
    Owned t;
    t.data = {name, dtype, {rows, 6}, nullptr};
    uint64_t size = 0;
    std::string problem;
    EXPECT_TRUE(tensorByteSize(dtype, t.data.shape, size, problem)) << problem;
    t.bytes = randomBytes(size, rng);
    return t;
}

std::vector<TensorData> views(std::vector<Owned>& owned) {
    std::vector<TensorData> out;
    for (Owned& o : owned) {
        o.data.data = o.bytes.data();
        out.push_back(o.data);
    }
    return out;
}

} // namespace

TEST(SafetensorsWriter, EveryDtypeReadsBackBitExactly) {
    TempDir dir;
    std::mt19937 rng(7);
    std::vector<Owned> owned;
    for (int d = 0; d < kDtypeCount; ++d) {
        const auto dtype = static_cast<Dtype>(d);
        owned.push_back(randomTensor(std::string("t.") + dtypeName(dtype), dtype, 4 + d % 3, rng));
    }
    const std::string path = dir.path() + "/all.safetensors";
    writeSafetensors(path, views(owned), {{"format", "pt"}, {"note", "caf\xC3\xA9"}});
    EXPECT_FALSE(pathExists(path + ".tmp"));
    SafetensorsFile f(path);
    EXPECT_EQ(f.headerSize() % 8, 0u);
    ASSERT_EQ(f.tensors().size(), owned.size());
    for (const Owned& o : owned) {
        const TensorView v = f.view(o.data.name);
        EXPECT_EQ(v.dtype, o.data.dtype) << o.data.name;
        EXPECT_EQ(v.shape, o.data.shape) << o.data.name;
        ASSERT_EQ(v.byteSize, o.bytes.size()) << o.data.name;
        EXPECT_EQ(std::memcmp(v.data, o.bytes.data(), o.bytes.size()), 0) << o.data.name;
        EXPECT_TRUE(v.aligned()) << o.data.name;
    }
    EXPECT_EQ(f.metadata(), (TensorMetadata{{"format", "pt"}, {"note", "caf\xC3\xA9"}}));
}

TEST(SafetensorsWriter, LaysTheHeaderOutAsHuggingFacesWriterDoes) {
    const std::string a(4, 'a'), b(8, 'b'), c(2, 'c');
    const std::vector<TensorData> tensors = {
        {"z.bias", Dtype::F16, {1}, c.data()}, {"b", Dtype::F32, {1}, a.data()}, {"a", Dtype::F64, {1}, b.data()}};
    std::vector<TensorInfo> layout;
    std::vector<size_t> order;
    const std::string header = safetensorsHeader(tensors, {{"format", "pt"}}, layout, order);
    // Largest element first, then by name; __metadata__ first; spaces to a multiple of 8.
    const std::string json = R"({"__metadata__":{"format":"pt"},)"
                             R"("a":{"dtype":"F64","shape":[1],"data_offsets":[0,8]},)"
                             R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]},)"
                             R"("z.bias":{"dtype":"F16","shape":[1],"data_offsets":[12,14]}})";
    EXPECT_EQ(header, json + std::string((8 - json.size() % 8) % 8, ' '));
    EXPECT_EQ(order, (std::vector<size_t>{2, 1, 0}));
    ASSERT_EQ(layout.size(), 3u);
    EXPECT_EQ(layout[2].begin, 12u);
}

TEST(SafetensorsWriter, RefusesBadTensorsBeforeWritingAnything) {
    TempDir dir;
    const std::string path = dir.path() + "/bad.safetensors";
    const std::string bytes(8, 'x');
    const std::vector<std::vector<TensorData>> bad = {
        {{"w", Dtype::F32, {2}, bytes.data()}, {"w", Dtype::F16, {4}, bytes.data()}},
        {{"__metadata__", Dtype::U8, {8}, bytes.data()}},
        {{"", Dtype::U8, {8}, bytes.data()}},
        {{"w", Dtype::F4, {3}, bytes.data()}},
        {{"w", Dtype::F32, {-2}, bytes.data()}},
        {{"w", Dtype::F32, {2}, nullptr}},
        {{"bad\xC3", Dtype::U8, {1}, bytes.data()}},
    };
    for (const auto& tensors : bad) {
        EXPECT_THROW(writeSafetensors(path, tensors), std::invalid_argument) << tensors.front().name;
        EXPECT_FALSE(pathExists(path));
        EXPECT_FALSE(pathExists(path + ".tmp"));
    }
}

TEST(SafetensorsWriter, ReplacesAFileWhole) {
    TempDir dir;
    const std::string path = dir.path() + "/w.safetensors";
    const std::string one(4, '\1'), two(8, '\2');
    writeSafetensors(path, {{"w", Dtype::F32, {1}, one.data()}});
    writeSafetensors(path, {{"w", Dtype::F32, {2}, two.data()}});
    SafetensorsFile f(path);
    EXPECT_EQ(f.view("w").byteSize, 8u);
}

TEST(SafetensorsWriter, AFullDiskNamesTheFileAndKeepsTheOldOne) {
    TempDir dir;
    TmpfsMount disk(dir.path() + "/disk", 256 << 10);
    if (!disk.mounted()) GTEST_SKIP() << disk.error();
    const std::string path = disk.path() + "/model.safetensors";
    const std::string small(1024, '\3');
    writeSafetensors(path, {{"w", Dtype::U8, {1024}, small.data()}});
    const std::string big(1 << 20, '\4');
    try {
        writeSafetensors(path, {{"w", Dtype::U8, {1 << 20}, big.data()}});
        FAIL() << "a 1 MiB file fitted on a 256 KiB disk";
    } catch (const FileError& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("no space left on device"), std::string::npos) << what;
        EXPECT_NE(what.find(path), std::string::npos) << what;
    }
    EXPECT_FALSE(pathExists(path + ".tmp"));
    SafetensorsFile f(path);
    EXPECT_EQ(f.view("w").byteSize, 1024u);
}

TEST(TensorViewRows, AreTheRowSlabOfTheTensor) {
    TempDir dir;
    std::string bytes;
    for (int i = 0; i < 12; ++i) {
        const float v = float(i);
        bytes.append(reinterpret_cast<const char*>(&v), 4);
    }
    const std::string path = dir.path() + "/rows.safetensors";
    const std::string nibbles(3, '\7');
    const std::string one(4, '\0');
    writeSafetensors(path, {{"w", Dtype::F32, {4, 3}, bytes.data()},
                            {"q", Dtype::F4, {2, 3}, nibbles.data()},
                            {"s", Dtype::F32, {}, one.data()}});
    SafetensorsFile f(path);
    const TensorView w = f.view("w");
    const TensorView slab = w.rows(1, 3);
    EXPECT_EQ(slab.shape, (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(slab.byteSize, 24u);
    EXPECT_EQ(slab.fileOffset, w.fileOffset + 12);
    EXPECT_EQ(reinterpret_cast<const float*>(slab.data)[0], 3.0f);
    EXPECT_EQ(reinterpret_cast<const float*>(slab.data)[5], 8.0f);
    const ByteRange range = rowByteRange(*f.find("w"), 3, 4, path);
    EXPECT_EQ(range.offset, 36u);
    EXPECT_EQ(range.size, 12u);
    EXPECT_EQ(w.rows(4, 4).byteSize, 0u);
    EXPECT_THROW(w.rows(2, 5), std::out_of_range);
    EXPECT_THROW(w.rows(-1, 1), std::out_of_range);
    EXPECT_THROW(f.view("s").rows(0, 1), std::out_of_range);
    EXPECT_THROW(f.view("q").rows(0, 1), FormatError); // 3 four-bit elements end mid-byte
}
