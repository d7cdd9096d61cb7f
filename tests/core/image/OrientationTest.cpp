// EXIF orientation, all eight, in JPEG (APP1), PNG (eXIf) and WebP (EXIF chunk), set by exiftool:
// the decoded pixels equal Pillow's after ImageOps.exif_transpose (and ImageMagick's -auto-orient
// for JPEG), and the sides the headers give are the shown ones.
#include "core/image/ExifOrientation.h"
#include "core/image/ImageDecoder.h"
#include "tests/core/image/ImageTools.h"
#include "tests/support/Process.h"

#include <gtest/gtest.h>

using namespace parallax;
using namespace parallax::testing;

namespace {

constexpr int kWidth = 23, kHeight = 14; // not square: the quarter turns show

// A big-endian TIFF block holding only Orientation.
std::string exifBlock(int orientation) {
    std::string t = std::string("MM\0*", 4) + bigEndian(8);
    t += std::string("\0\1", 2);                                                  // one entry
    t += std::string("\x01\x12\0\3", 4) + bigEndian(1);                           // Orientation, SHORT, 1
    t += std::string("\0", 1) + static_cast<char>(orientation) + std::string("\0\0", 2); // value, padded
    t += bigEndian(0);                                                            // no next IFD
    return t;
}

class Orientation : public ::testing::Test {
protected:
    void expectEveryOrientation(const std::string& base, bool withMagick) {
        const DecodedImage plain = decodeImageFile(base);
        ASSERT_EQ(plain.info.orientation, 1);
        std::vector<std::pair<std::string, int>> files;
        std::vector<std::string> paths;
        for (int o = 1; o <= 8; ++o) {
            paths.push_back(dir.path() + "/o" + std::to_string(o) + "-" + base.substr(base.rfind('/') + 1));
            writeFileBytes(paths.back(), readFile(base));
            files.emplace_back(paths.back(), o);
        }
        ASSERT_TRUE(setOrientations(files));
        const std::vector<Image> pillow = pilRgbAll(paths);
        for (int o = 1; o <= 8; ++o) {
            const std::string& path = paths[static_cast<size_t>(o - 1)];
            SCOPED_TRACE(path);
            const DecodedImage d = decodeImageFile(path);
            EXPECT_EQ(d.info.orientation, o);
            const bool quarter = o >= 5;
            EXPECT_EQ(d.rgb.width, quarter ? kHeight : kWidth);
            EXPECT_EQ(d.rgb.height, quarter ? kWidth : kHeight);
            EXPECT_EQ(d.info.storedWidth, kWidth);
            const ImageInfo info = readImageInfoFile(path);
            EXPECT_EQ(info.orientation, o);
            EXPECT_EQ(info.width, d.rgb.width);
            EXPECT_EQ(info.height, d.rgb.height);
            EXPECT_EQ(compareImages(d.rgb, pillow[static_cast<size_t>(o - 1)]).max, 0);
            if (withMagick) {
                EXPECT_EQ(compareImages(d.rgb, magickRgb(path)).max, 0);
            }
            EXPECT_EQ(compareImages(d.rgb, orientPixels(plain.rgb, o)).max, 0);
        }
    }

    TempDir dir;
};

TEST_F(Orientation, JpegEveryOrientationEqualsPillowAndImageMagick) {
    REQUIRE_CONVERT();
    REQUIRE_EXIFTOOL();
    REQUIRE_PIL();
    expectEveryOrientation(makeImage(dir.path(), "base.jpg", testPicture(kWidth, kHeight, 3, 40), 8, {"-quality", "95"}),
                           true);
}

TEST_F(Orientation, PngEveryOrientationEqualsPillow) {
    REQUIRE_CONVERT();
    REQUIRE_EXIFTOOL();
    REQUIRE_PIL();
    expectEveryOrientation(makeImage(dir.path(), "base.png", testPicture(kWidth, kHeight, 4, 41), 8, {"PNG32:"}), false);
}

TEST_F(Orientation, WebpEveryOrientationEqualsPillow) {
    REQUIRE_CONVERT();
    REQUIRE_EXIFTOOL();
    REQUIRE_PIL();
    expectEveryOrientation(makeImage(dir.path(), "base.webp", testPicture(kWidth, kHeight, 3, 42), 8,
                                     {"-define", "webp:lossless=true"}),
                           false);
}

TEST_F(Orientation, PngExifAfterTheImageDataCounts) {
    REQUIRE_CONVERT();
    REQUIRE_PIL();
    const std::string base = makeImage(dir.path(), "late.png", testPicture(kWidth, kHeight, 3, 43), 8, {"PNG24:"});
    std::string bytes = readFile(base);
    const size_t iend = bytes.rfind("IEND") - 4;
    bytes.insert(iend, pngChunk("eXIf", exifBlock(8)));
    const std::string path = dir.path() + "/late-exif.png";
    writeFileBytes(path, bytes);
    const DecodedImage d = decodeImageFile(path);
    EXPECT_EQ(d.info.orientation, 8);
    EXPECT_EQ(readImageInfoFile(path).width, kHeight);
    EXPECT_EQ(compareImages(d.rgb, pilRgb(path)).max, 0);
}

TEST_F(Orientation, PngXmpOrientationCountsWithoutExif) {
    REQUIRE_CONVERT();
    REQUIRE_PIL();
    const std::string base = makeImage(dir.path(), "xmp.png", testPicture(kWidth, kHeight, 3, 44), 8, {"PNG24:"});
    std::string bytes = readFile(base);
    const std::string xmp = "<x:xmpmeta><rdf:Description tiff:Orientation=\"6\"/></x:xmpmeta>";
    bytes.insert(33, pngChunk("iTXt", std::string("XML:com.adobe.xmp\0\0\0\0\0", 22) + xmp));
    const std::string path = dir.path() + "/xmp-6.png";
    writeFileBytes(path, bytes);
    const DecodedImage d = decodeImageFile(path);
    EXPECT_EQ(d.info.orientation, 6);
    EXPECT_EQ(compareImages(d.rgb, pilRgb(path)).max, 0);
}

} // namespace
