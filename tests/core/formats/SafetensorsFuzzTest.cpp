// The reader under damage: a valid file cut at every byte, headers mutated at random (fixed seed),
// and sparse files of 2 GiB whose headers claim what they do not hold. Each open either succeeds
// with every view inside the file or fails with a FormatError naming the file; memory stays small.
#include "core/formats/SafetensorsFile.h"
#include "tests/core/formats/SafetensorsFiles.h"
#include "tests/support/PeakMemory.h"
#include "tests/support/Process.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

using namespace parallax;
using namespace parallax::testing;

namespace {

// Opens `path`: true when it opened (every view then lies inside the file), false on a
// FormatError naming it; any other exception fails the test.
bool openCleanly(const std::string& path, uint64_t fileSize) {
    try {
        SafetensorsFile f(path);
        for (const TensorInfo& t : f.tensors()) {
            const TensorView v = f.view(t);
            EXPECT_LE(v.fileOffset + v.byteSize, fileSize) << t.name;
        }
        return true;
    } catch (const FormatError& e) {
        EXPECT_EQ(e.file(), path);
        EXPECT_EQ(std::string(e.what()).rfind(path + ": ", 0), 0u) << e.what();
        return false;
    }
}

// A sparse file of `size` bytes that starts with `head`.
void sparseFile(const std::string& path, const std::string& head, uint64_t size) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::ftruncate(fd, static_cast<off_t>(size)), 0);
    ASSERT_EQ(::pwrite(fd, head.data(), head.size(), 0), static_cast<ssize_t>(head.size()));
    ::close(fd);
}

constexpr uint64_t kTwoGiB = uint64_t(2) << 30;
constexpr int64_t kMemorySlack = 64 << 20; // far below anything claimed here

} // namespace

TEST(SafetensorsFuzz, AFileCutAtEveryByteIsRefusedCleanly) {
    TempDir dir;
    const std::string whole = safetensorsBytes(validHeader(), validData());
    const std::string path = dir.path() + "/whole.safetensors";
    writeBytes(path, whole);
    ASSERT_TRUE(openCleanly(path, whole.size()));
    for (size_t n = 0; n < whole.size(); ++n) {
        const std::string cut = dir.path() + "/cut" + std::to_string(n) + ".safetensors";
        writeBytes(cut, whole.substr(0, n));
        EXPECT_FALSE(openCleanly(cut, n)) << "cut at byte " << n;
        ::unlink(cut.c_str());
    }
}

TEST(SafetensorsFuzz, RandomlyMutatedHeadersFailCleanly) {
    TempDir dir;
    const std::string whole = safetensorsBytes(validHeader(), validData());
    const size_t headerEnd = 8 + validHeader().size();
    const char structural[] = "{}[],:\"-0123456789.e \\Fa";
    std::mt19937 rng(20240611);
    int opened = 0;
    for (int i = 0; i < 4000; ++i) {
        std::string bytes = whole;
        const int edits = 1 + static_cast<int>(rng() % 4);
        for (int k = 0; k < edits; ++k) {
            // Mostly the JSON, sometimes the length; half random bytes, half JSON punctuation.
            const size_t at = rng() % 8 == 0 ? rng() % 8 : 8 + rng() % (headerEnd - 8);
            bytes[at] = rng() % 2 ? static_cast<char>(rng() & 0xFF) : structural[rng() % (sizeof structural - 1)];
        }
        if (rng() % 10 == 0) bytes.resize(rng() % bytes.size());
        // A new file each time: rewriting one in place makes ext4 flush it to disk on every close.
        const std::string path = dir.path() + "/mutated" + std::to_string(i) + ".safetensors";
        writeBytes(path, bytes);
        if (openCleanly(path, bytes.size())) ++opened;
        ::unlink(path.c_str());
    }
    // Some mutations keep the file valid (a digit of the data or a space changed): both paths ran.
    EXPECT_GT(opened, 0);
    EXPECT_LT(opened, 4000);
}

TEST(SafetensorsFuzz, ASparseFileWithAHugeClaimedHeaderAllocatesNothingOfIt) {
    TempDir dir;
    if (!resetPeakRss()) GTEST_SKIP() << "cannot reset the peak RSS (/proc/self/clear_refs)";
    struct Case {
        uint64_t claimed;
        std::string phrase;
    };
    const Case cases[] = {
        {kMaxSafetensorsHeader, "the header is not JSON"},            // 100 MB of zeros
        {kMaxSafetensorsHeader + 1, "the format allows at most"},     // just over the limit
        {uint64_t(1) << 40, "the format allows at most"},             // a terabyte
        {kTwoGiB, "the format allows at most"},                       // the whole file
    };
    for (const Case& c : cases) {
        const std::string path = dir.path() + "/sparse.safetensors";
        sparseFile(path, lengthField(c.claimed), kTwoGiB);
        ASSERT_TRUE(resetPeakRss());
        const int64_t before = procStatusBytes("VmRSS");
        try {
            SafetensorsFile f(path);
            ADD_FAILURE() << "opened a file claiming a header of " << c.claimed;
        } catch (const FormatError& e) {
            EXPECT_NE(std::string(e.what()).find(c.phrase), std::string::npos) << e.what();
        }
        EXPECT_LT(procStatusBytes("VmHWM") - before, kMemorySlack) << "claimed " << c.claimed;
    }
    // An object that opens and then holds 100 MB of zeros: refused at its first bytes.
    const std::string path = dir.path() + "/open.safetensors";
    sparseFile(path, lengthField(kMaxSafetensorsHeader) + "{", kTwoGiB);
    ASSERT_TRUE(resetPeakRss());
    const int64_t before = procStatusBytes("VmRSS");
    EXPECT_THROW(SafetensorsFile{path}, FormatError);
    EXPECT_LT(procStatusBytes("VmHWM") - before, kMemorySlack);
}

TEST(SafetensorsFuzz, AValidTwoGiBFileOpensWithoutReadingItsData) {
    TempDir dir;
    if (!resetPeakRss()) GTEST_SKIP() << "cannot reset the peak RSS (/proc/self/clear_refs)";
    const uint64_t elements = (kTwoGiB - 4096) / 4;
    std::string header = "{\"big\":{\"dtype\":\"F32\",\"shape\":[" + std::to_string(elements) +
                         "],\"data_offsets\":[0," + std::to_string(elements * 4) + "]}}";
    header.append(4096 - 8 - header.size(), ' ');
    const std::string path = dir.path() + "/big.safetensors";
    sparseFile(path, safetensorsBytes(header, ""), kTwoGiB);
    ASSERT_TRUE(resetPeakRss());
    const int64_t before = procStatusBytes("VmRSS");
    SafetensorsFile f(path);
    const TensorView big = f.view("big");
    EXPECT_EQ(big.byteSize, elements * 4);
    EXPECT_EQ(big.fileOffset, 4096u);
    // A row slab of it, as a tensor-parallel rank reads it: only those pages are touched.
    const TensorView slab = big.rows(1000, 1000 + 1024);
    volatile unsigned char sum = 0;
    for (uint64_t i = 0; i < slab.byteSize; ++i) sum = sum + static_cast<unsigned char>(slab.data[i]);
    EXPECT_EQ(sum, 0);
    EXPECT_LT(procStatusBytes("VmHWM") - before, kMemorySlack);
}
