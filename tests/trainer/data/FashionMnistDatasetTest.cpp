#include "core/spec/ModelDims.h"
#include "tests/trainer/data/TempDir.h"
#include "tests/trainer/support/FashionMnistFiles.h"
#include "trainer/data/DataError.h"
#include "trainer/data/DatasetUtils.h"
#include "trainer/data/FashionMnistDataset.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <fstream>
#include <iterator>
#include <numeric>

namespace parallax {
namespace {

using test::TempDir;

const std::string kFolder = FashionMnistDataset::kDefaultFolder;

ModelDims dimsOf(const std::string& kind, const std::string& preset = "tiny") {
    ModelSpec spec;
    spec.kind = Choice<ModelKind>::named(kind);
    spec.preset = preset;
    return resolveModel(spec);
}

bool installed() { return testing::fashionMnistInstalled(); }

const FashionMnistDataset& trainSet() {
    static const FashionMnistDataset data("", "train", dimsOf("qwen_image_vae"), 1);
    return data;
}

std::string bigEndian(uint32_t v) {
    return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8), static_cast<char>(v)};
}

std::string imagesFile(uint32_t count, uint32_t side, size_t payload, uint32_t magic = 0x803) {
    std::string bytes = bigEndian(magic) + bigEndian(count) + bigEndian(side) + bigEndian(side);
    for (size_t i = 0; i < payload; ++i) bytes.push_back(static_cast<char>(i % 251));
    return bytes;
}

std::string labelsFile(uint32_t count, const std::string& labels) {
    return bigEndian(0x801) + bigEndian(count) + labels;
}

void writeGzip(const std::string& path, const std::string& bytes) {
    gzFile f = gzopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())), static_cast<int>(bytes.size()));
    gzclose(f);
}

std::string readFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The DataError message of loading the train split from `folder`.
std::string loadError(const std::string& folder) {
    try {
        FashionMnistDataset data(folder, "train", dimsOf("qwen_image_vae"), 1);
    } catch (const DataError& e) {
        return e.what();
    }
    return "(loaded without error)";
}

TEST(FashionMnistDataset, LoadsTheDebianPackageWithItsCountsAndLabels) {
    ASSERT_TRUE(installed()) << testing::kFashionMnistMissing;
    const FashionMnistDataset& train = trainSet();
    ASSERT_EQ(train.size(), 60000);
    std::vector<int64_t> perClass(10, 0);
    for (int64_t i = 0; i < train.size(); ++i) {
        const int64_t label = train.label(i);
        ASSERT_GE(label, 0);
        ASSERT_LT(label, 10);
        ++perClass[static_cast<size_t>(label)];
    }
    EXPECT_EQ(perClass, std::vector<int64_t>(10, 6000));
    EXPECT_EQ(train.label(0), 9); // the first training image is an ankle boot
    EXPECT_NE(train.describe().find("60000 images"), std::string::npos);

    const FashionMnistDataset test("", "t10k", dimsOf("qwen_image_vae"), 1);
    EXPECT_EQ(test.size(), 10000);
    EXPECT_EQ(test.rawImage(0).sizes(), torch::IntArrayRef({1, 28, 28}));
    EXPECT_LE(test.rawImage(0).max().item<float>(), 255.0f);
}

TEST(FashionMnistDataset, ASampleIsTheSameWhateverBatchItIsIn) {
    ASSERT_TRUE(installed()) << testing::kFashionMnistMissing;
    const FashionMnistDataset& train = trainSet();
    std::vector<int64_t> indices(256);
    std::iota(indices.begin(), indices.end(), 1000);
    const Batch batch = train.makeBatch(indices, 0);
    ASSERT_EQ(batch.images.sizes(), torch::IntArrayRef({256, 3, 32, 32}));
    EXPECT_FALSE(batch.tokens.defined()) << "images alone: a VAE reads no captions";
    EXPECT_TRUE(torch::equal(train.makeBatch({1005}, 3).images[0], batch.images[5]));
}

// For a VAE (qwen_image_vae): pixels in [-1, 1] (white 1, the black ground -1), resized to its 32 x 32
// and repeated over RGB; the noise of each posterior draw of the latents' shape, the same sample's
// whatever batch it is in.
TEST(FashionMnistDataset, AVaeReadsPixelsInMinusOneToOneWithTheNoiseOfItsLatents) {
    ASSERT_TRUE(installed()) << testing::kFashionMnistMissing;
    const ModelDims dims = dimsOf("qwen_image_vae");
    const FashionMnistDataset clothes("", "t10k", dims, 1);
    const Batch batch = clothes.makeBatch({3, 4, 5}, 2);
    ASSERT_EQ(batch.images.sizes(), torch::IntArrayRef({3, 3, 32, 32}));
    EXPECT_GE(batch.images.min().item<double>(), -1.0);
    EXPECT_LE(batch.images.max().item<double>(), 1.0);
    EXPECT_NEAR(batch.images[0][0][0][0].item<double>(), -1.0, 1e-6) << "the corner is background";
    EXPECT_TRUE(torch::equal(batch.images[0][0], batch.images[0][2])) << "grey repeated over RGB";
    ASSERT_EQ(batch.noise.sizes(), torch::IntArrayRef({3, 16, 4, 4}));
    EXPECT_FALSE(batch.timesteps.defined());
    EXPECT_TRUE(torch::equal(clothes.makeBatch({5}, 2).noise[0], batch.noise[2]));
    EXPECT_FALSE(torch::equal(clothes.makeBatch({5}, 3).noise[0], batch.noise[2]));
}

TEST(FashionMnistDataset, ImagesAreResizedAndRepeatedToTheModelsShape) {
    ASSERT_TRUE(installed()) << testing::kFashionMnistMissing;
    ModelSpec spec;
    spec.kind = ModelKind::QwenImageVae;
    spec.image_size = 64;
    spec.channels = 4;
    const ModelDims dims = resolveModel(spec);
    const FashionMnistDataset test("", "t10k", dims, 1);
    const Batch batch = test.makeBatch({0, 1}, 2);
    ASSERT_EQ(batch.images.sizes(), torch::IntArrayRef({2, 4, 64, 64}));
    EXPECT_TRUE(torch::equal(batch.images[0][0], batch.images[0][3]));
    EXPECT_EQ(batch.noise.sizes(), torch::IntArrayRef({2, 16, 8, 8}));
    // Bilinear resizing keeps the picture: the mean brightness barely moves.
    const FashionMnistDataset small("", "t10k", dimsOf("qwen_image_vae"), 1);
    const torch::Tensor original = small.makeBatch({0}, 0).images[0][0];
    const torch::Tensor raw = 2.0 * test.rawImage(0)[0] / 255.0 - 1.0;
    EXPECT_NEAR(batch.images[0][0].mean().item<double>(), raw.mean().item<double>(), 0.04);
    EXPECT_NEAR(original.mean().item<double>(), raw.mean().item<double>(), 0.04);
}

TEST(FashionMnistDataset, MissingFilesNameThePackage) {
    TempDir dir;
    const std::string message = loadError(dir.path());
    EXPECT_EQ(message.rfind(dir.file("train-images-idx3-ubyte.gz") + ": not found; install dataset-fashion-mnist", 0), 0u)
        << message;
}

TEST(FashionMnistDataset, TruncatedImagesSayWhatIsMissing) {
    TempDir dir;
    writeGzip(dir.file("train-images-idx3-ubyte.gz"), imagesFile(60000, 28, 1200));
    EXPECT_EQ(loadError(dir.path()),
              dir.file("train-images-idx3-ubyte.gz") +
                  ": expected 47040000 image bytes, found 1200; the file is truncated; replace it with an intact copy "
                  "(dataset-fashion-mnist has one)");
}

TEST(FashionMnistDataset, ACutCompressedStreamIsReportedAsTruncated) {
    ASSERT_TRUE(installed()) << testing::kFashionMnistMissing;
    TempDir dir;
    const std::string whole = readFile(kFolder + "/train-images-idx3-ubyte.gz");
    dir.write("train-images-idx3-ubyte.gz", whole.substr(0, 200000));
    const std::string message = loadError(dir.path());
    EXPECT_NE(message.find("train-images-idx3-ubyte.gz: expected 47040000 image bytes, found "), std::string::npos)
        << message;
    EXPECT_NE(message.find("; the file is truncated"), std::string::npos) << message;
}

TEST(FashionMnistDataset, CorruptFilesAreRecognized) {
    TempDir dir;
    const std::string images = dir.file("train-images-idx3-ubyte.gz");
    dir.write("train-images-idx3-ubyte.gz", "this is plain text, not a gzip stream at all");
    EXPECT_NE(loadError(dir.path()).find(images + ": is not gzip-compressed"), std::string::npos);

    writeGzip(images, imagesFile(3, 28, 3 * 784, 0x801));
    EXPECT_NE(loadError(dir.path()).find(images + ": magic number 0x00000801, expected 0x00000803"),
              std::string::npos);

    writeGzip(images, imagesFile(3, 32, 3 * 1024));
    EXPECT_NE(loadError(dir.path()).find(images + ": images are 32x32, expected 28x28"), std::string::npos);

    writeGzip(images, imagesFile(3, 28, 3 * 784 + 10));
    EXPECT_NE(loadError(dir.path()).find(images + ": holds more than the 2352 image bytes"), std::string::npos);

    // A damaged checksum: zlib reports the data as corrupt.
    writeGzip(images, imagesFile(3, 28, 3 * 784));
    std::string gz = readFile(images);
    gz[gz.size() - 8] = static_cast<char>(gz[gz.size() - 8] ^ 0x5a);
    dir.write("train-images-idx3-ubyte.gz", gz);
    EXPECT_NE(loadError(dir.path()).find(images + ": the compressed data is corrupt (incorrect data check)"),
              std::string::npos)
        << loadError(dir.path());
}

TEST(FashionMnistDataset, LabelsMustMatchTheImages) {
    TempDir dir;
    writeGzip(dir.file("train-images-idx3-ubyte.gz"), imagesFile(3, 28, 3 * 784));
    const std::string labels = dir.file("train-labels-idx1-ubyte.gz");
    EXPECT_NE(loadError(dir.path()).find(labels + ": not found"), std::string::npos);

    writeGzip(labels, labelsFile(2, std::string("\x01\x02", 2)));
    EXPECT_NE(loadError(dir.path()).find(labels + ": holds 2 labels but"), std::string::npos);

    writeGzip(labels, labelsFile(3, std::string("\x01\x0c\x02", 3)));
    EXPECT_NE(loadError(dir.path()).find(labels + ": label 12 of image 1 is outside 0..9"), std::string::npos);

    writeGzip(labels, labelsFile(3, std::string("\x01\x07\x02", 3)));
    const FashionMnistDataset data(dir.path(), "train", dimsOf("qwen_image_vae"), 1);
    EXPECT_EQ(data.size(), 3);
    EXPECT_EQ(data.label(1), 7);
    EXPECT_EQ(FashionMnistDataset::classNames()[7], "sneaker");
    EXPECT_EQ(data.makeBatch({1}, 0).images.sizes(), torch::IntArrayRef({1, 3, 32, 32}));
}

} // namespace
} // namespace parallax
