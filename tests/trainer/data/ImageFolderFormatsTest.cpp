// image-folder with the images people keep: PNG, JPEG and WebP through core/image's decoders, beside
// PGM/PPM, for a VAE (qwen_image_vae) to train on. PNG is checked to the byte against the pixels
// written; JPEG, which ImageMagick's convert writes, within its compression's error; a damaged file
// is named, at the start when its header shows it, else when a batch reads it.
#include "core/image/PngEncoder.h"
#include "core/spec/ModelDims.h"
#include "core/util/Files.h"
#include "tests/support/Process.h"
#include "tests/trainer/data/TempDir.h"
#include "trainer/data/DataError.h"
#include "trainer/data/DatasetUtils.h"
#include "trainer/data/ImageFolderDataset.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

namespace parallax {
namespace {

using test::TempDir;
using testing::ProcessResult;
using testing::runProcess;

ModelDims vaeDims() {
    ModelSpec spec;
    spec.kind = ModelKind::QwenImageVae;
    return resolveModel(spec); // 3 channels, 32 x 32
}

// A 12 x 10 RGB picture: a horizontal ramp in red, a vertical one in green, a checkerboard in blue.
Image picture() {
    Image rgb;
    rgb.width = 12;
    rgb.height = 10;
    rgb.channels = 3;
    for (int y = 0; y < rgb.height; ++y)
        for (int x = 0; x < rgb.width; ++x) {
            rgb.samples.push_back(static_cast<uint8_t>(20 * x));
            rgb.samples.push_back(static_cast<uint8_t>(25 * y));
            rgb.samples.push_back(static_cast<uint8_t>(((x / 3 + y / 3) % 2) * 200 + 20));
        }
    return rgb;
}

// (3, h, w) in [0, 1]: what readImage should give for `rgb`.
torch::Tensor unitTensor(Image rgb) {
    return torch::from_blob(rgb.samples.data(), {rgb.height, rgb.width, 3}, torch::kUInt8)
        .permute({2, 0, 1})
        .to(torch::kFloat32)
        .div(255.0);
}

std::string readFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

bool haveConvert() { return std::string(PARALLAX_CONVERT).size() > 0; }

TEST(ImageFolderFormats, PngAndJpegTrainBesideNetpbmAndComeInMinusOneToOne) {
    if (!haveConvert()) GTEST_SKIP() << "ImageMagick's convert was not found at configure time (imagemagick)";
    TempDir dir;
    const Image rgb = picture();
    createDirectories(dir.file("apple"));
    writePngFile(rgb, dir.file("apple/a.png"));
    const ProcessResult jpeg =
        runProcess({PARALLAX_CONVERT, dir.file("apple/a.png"), "-quality", "95", dir.file("apple/b.JPG")});
    ASSERT_EQ(jpeg.exitCode, 0) << jpeg.output;
    dir.write("pear/c.ppm", "P6\n2 2\n255\n" + std::string(12, '\x80'));
    dir.write("pear/notes.txt", "not an image");

    const ModelDims dims = vaeDims();
    ImageFolderDataset data(dir.path(), dims, 3);
    ASSERT_EQ(data.size(), 3);
    EXPECT_EQ(data.classNames(), (std::vector<std::string>{"apple", "pear"}));
    // PNG is lossless: exactly the bytes written, over 255.
    EXPECT_TRUE(torch::equal(data.readImage(0), unitTensor(rgb)));
    // JPEG: within its compression's error of the same picture.
    const torch::Tensor fromJpeg = data.readImage(1);
    ASSERT_EQ(fromJpeg.sizes(), torch::IntArrayRef({3, 10, 12}));
    EXPECT_LT((fromJpeg - unitTensor(rgb)).abs().mean().item<double>(), 0.03);
    const Batch batch = data.makeBatch({0, 1, 2}, 0);
    ASSERT_EQ(batch.images.sizes(), torch::IntArrayRef({3, 3, dims.image_size, dims.image_size}));
    EXPECT_TRUE(torch::allclose(batch.images[0], fitImage(2.0 * unitTensor(rgb) - 1.0, 3, dims.image_size)));
    EXPECT_GE(batch.images.min().item<double>(), -1.0);
    EXPECT_LE(batch.images.max().item<double>(), 1.0);
    EXPECT_NE(data.describe().find("3 images in 2 classes"), std::string::npos);
}

TEST(ImageFolderFormats, ADamagedImageIsNamedWithWhatIsWrong) {
    TempDir dir;
    createDirectories(dir.file("cat"));
    writePngFile(picture(), dir.file("cat/good.png"));
    // Not an image at all: refused at the start, from its header.
    dir.write("cat/noise.png", "this is no PNG");
    try {
        ImageFolderDataset data(dir.path(), vaeDims(), 1);
        FAIL() << "a file that is no image was taken";
    } catch (const DataError& e) {
        EXPECT_NE(std::string(e.what()).find(dir.file("cat/noise.png") + ": "), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("replace the image or take it out of the folder"), std::string::npos)
            << e.what();
    }
    // Cut after its header: the start passes, the batch that reads it names it.
    const std::string whole = readFile(dir.file("cat/good.png"));
    dir.write("cat/noise.png", whole.substr(0, whole.size() / 2));
    ImageFolderDataset data(dir.path(), vaeDims(), 1);
    ASSERT_EQ(data.size(), 2);
    EXPECT_NO_THROW(data.makeBatch({0}, 0));
    try {
        data.makeBatch({1}, 0);
        FAIL() << "a truncated PNG was read";
    } catch (const DataError& e) {
        EXPECT_NE(std::string(e.what()).find(dir.file("cat/noise.png") + ": "), std::string::npos) << e.what();
    }
}

} // namespace
} // namespace parallax
