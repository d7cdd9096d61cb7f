#include "core/spec/ModelDims.h"
#include "tests/trainer/data/TempDir.h"
#include "trainer/data/DataError.h"
#include "trainer/data/TextDataset.h"

#include <gtest/gtest.h>

namespace parallax {
namespace {

using test::TempDir;

ModelDims gptWithContext(int64_t t) {
    ModelSpec spec;
    spec.kind = ModelKind::Gpt;
    spec.seq_len = t;
    return resolveModel(spec);
}

std::string errorOf(const std::string& path, const ModelDims& dims) {
    try {
        TextDataset data(path, dims);
    } catch (const DataError& e) {
        return e.what();
    }
    return "(no error)";
}

TEST(TextDataset, SamplesAreOverlappingByteWindows) {
    TempDir dir;
    dir.write("corpus.txt", "abcdefghijklmnopqrstuvwxyz"); // 26 bytes
    const ModelDims dims = gptWithContext(8);
    TextDataset data(dir.file("corpus.txt"), dims);
    EXPECT_EQ(data.size(), 3); // windows start at 0, 8, 16; 24 has no 9th byte
    const Batch batch = data.makeBatch({2, 0}, 0);
    ASSERT_EQ(batch.tokens.sizes(), torch::IntArrayRef({2, 9}));
    EXPECT_EQ(batch.tokens[0][0].item<int64_t>(), 'q');
    EXPECT_EQ(batch.tokens[0][8].item<int64_t>(), 'y');
    EXPECT_EQ(batch.tokens[1][0].item<int64_t>(), 'a');
    EXPECT_EQ(batch.tokens[1][8].item<int64_t>(), 'i');
    EXPECT_EQ(batch.sample_index, (std::vector<int64_t>{2, 0}));
    EXPECT_THROW(data.makeBatch({3}, 0), DataError);
    EXPECT_NE(data.describe().find("3 windows of 9 bytes"), std::string::npos);
}

TEST(TextDataset, BytesAboveAsciiAreTokensToo) {
    TempDir dir;
    dir.write("utf8.txt", std::string("\xc3\xa9\xff\x00\x01", 5));
    TextDataset data(dir.file("utf8.txt"), gptWithContext(4));
    const Batch batch = data.makeBatch({0}, 0);
    EXPECT_EQ(batch.tokens[0][0].item<int64_t>(), 0xc3);
    EXPECT_EQ(batch.tokens[0][2].item<int64_t>(), 255);
    EXPECT_EQ(batch.tokens[0][3].item<int64_t>(), 0);
}

TEST(TextDataset, ErrorsNameTheFileAndTheSizes) {
    TempDir dir;
    dir.write("short.txt", "0123456789");
    EXPECT_EQ(errorOf(dir.file("short.txt"), gptWithContext(64)),
              dir.file("short.txt") + ": has 10 bytes, but one sample needs model.seq_len + 1 = 65; use a longer file "
                                      "or a smaller model.seq_len");
    EXPECT_NE(errorOf(dir.file("absent.txt"), gptWithContext(8)).find(dir.file("absent.txt") + ": not found"),
              std::string::npos);
    EXPECT_NE(errorOf("", gptWithContext(8)).find("data.path is empty"), std::string::npos);
    ModelSpec vae;
    vae.kind = ModelKind::QwenImageVae;
    EXPECT_NE(errorOf(dir.file("short.txt"), resolveModel(vae)).find("use model.kind = \"gpt\""), std::string::npos);
    ModelDims small = gptWithContext(4);
    small.vocab = 100;
    EXPECT_NE(errorOf(dir.file("short.txt"), small).find("model.vocab = 100 is smaller than the 256 byte tokens"),
              std::string::npos);
}

} // namespace
} // namespace parallax
