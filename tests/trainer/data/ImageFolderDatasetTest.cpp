#include "core/spec/ModelDims.h"
#include "tests/trainer/data/TempDir.h"
#include "trainer/data/DataError.h"
#include "trainer/data/DatasetUtils.h"
#include "trainer/data/ImageFolderDataset.h"

#include <gtest/gtest.h>

namespace parallax {
namespace {

using test::TempDir;

ModelDims dimsOf(const std::string& kind, int64_t channels) {
    ModelSpec spec;
    spec.kind = Choice<ModelKind>::named(kind);
    spec.channels = channels;
    return resolveModel(spec);
}

// A binary PGM (channels 1) or PPM (channels 3) whose pixel i of channel c is (i + c * 50) % 256.
std::string netpbm(int64_t width, int64_t height, int64_t channels, const std::string& comment = "") {
    std::string bytes = std::string(channels == 1 ? "P5" : "P6") + "\n" + comment + std::to_string(width) + " " +
                        std::to_string(height) + "\n255\n";
    for (int64_t i = 0; i < width * height; ++i)
        for (int64_t c = 0; c < channels; ++c) bytes.push_back(static_cast<char>((i + c * 50) % 256));
    return bytes;
}

std::string errorOf(const std::string& folder) {
    try {
        ImageFolderDataset data(folder, dimsOf("qwen_image_vae", 1), 1);
    } catch (const DataError& e) {
        return e.what();
    }
    return "(no error)";
}

TEST(ImageFolderDataset, ClassesComeFromSubfoldersAndImagesComeInMinusOneToOne) {
    TempDir dir;
    dir.write("red_apple/a.ppm", netpbm(10, 12, 3));
    dir.write("red_apple/b.ppm", netpbm(16, 16, 3, "# made by a test\n"));
    dir.write("pear/x.pgm", netpbm(20, 20, 1));
    dir.write("pear/notes.txt", "ignored");
    dir.write("empty/readme", "no images here");
    const ModelDims dims = dimsOf("qwen_image_vae", 1);
    ImageFolderDataset data(dir.path(), dims, 3);
    ASSERT_EQ(data.size(), 3);
    EXPECT_EQ(data.classNames(), (std::vector<std::string>{"pear", "red_apple"}));
    EXPECT_EQ(data.label(0), 0);
    EXPECT_EQ(data.label(2), 1);
    const torch::Tensor raw = data.readImage(1); // red_apple/a.ppm
    ASSERT_EQ(raw.sizes(), torch::IntArrayRef({3, 12, 10}));
    EXPECT_FLOAT_EQ(raw[1][0][3].item<float>(), 53.0f / 255.0f); // pixel 3 of channel 1
    const Batch batch = data.makeBatch({0, 1, 2}, 0);
    ASSERT_EQ(batch.images.sizes(), torch::IntArrayRef({3, 1, dims.image_size, dims.image_size}));
    // Pixels over their maximum, then 2 x - 1: what the VAE reads; resized to the model's side.
    EXPECT_TRUE(torch::allclose(batch.images[1], fitImage(2.0 * raw - 1.0, 1, dims.image_size)));
    EXPECT_GE(batch.images.min().item<double>(), -1.0);
    EXPECT_LE(batch.images.max().item<double>(), 1.0);
    EXPECT_FALSE(batch.tokens.defined()); // images alone
    // The noise of each image's posterior draw, of the latents' shape.
    const int64_t latent = dims.image_size / dims.patch;
    EXPECT_EQ(batch.noise.sizes(), torch::IntArrayRef({3, dims.z_dim, latent, latent}));
    EXPECT_NE(data.describe().find("3 images in 2 classes"), std::string::npos);
    // Grey images fill every channel of a colour model.
    ImageFolderDataset colour(dir.path(), dimsOf("qwen_image_vae", 3), 3);
    const Batch c = colour.makeBatch({0}, 0);
    ASSERT_EQ(c.images.sizes(), torch::IntArrayRef({1, 3, dims.image_size, dims.image_size}));
    EXPECT_TRUE(torch::equal(c.images[0][0], c.images[0][2]));
}

TEST(ImageFolderDataset, EmptyMissingOrBadFoldersAreClearErrors) {
    TempDir dir;
    EXPECT_NE(errorOf(dir.path()).find(".ppm images in class subfolders; expected " + dir.path() + "/<class>/"),
              std::string::npos)
        << errorOf(dir.path());
    EXPECT_NE(errorOf(dir.file("nowhere")).find(dir.file("nowhere") + ": not found or not a folder"), std::string::npos);
    EXPECT_NE(errorOf("").find("data.path is empty"), std::string::npos);
    dir.write("cat/one.pgm", "P2\n2 2\n255\n0 0 0 0\n"); // ASCII PGM
    EXPECT_NE(errorOf(dir.path()).find(dir.file("cat/one.pgm") + ": not a binary PGM (P5) or PPM (P6) image"),
              std::string::npos);
    dir.write("cat/one.pgm", netpbm(8, 8, 1).substr(0, 30));
    ImageFolderDataset truncated(dir.path(), dimsOf("qwen_image_vae", 1), 1);
    try {
        truncated.makeBatch({0}, 0);
        FAIL() << "read a truncated image";
    } catch (const DataError& e) {
        EXPECT_NE(std::string(e.what()).find("expected 64 pixel bytes, found 19; the file is truncated"),
                  std::string::npos)
            << e.what();
    }
}

} // namespace
} // namespace parallax
