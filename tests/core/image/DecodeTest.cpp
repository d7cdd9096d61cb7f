// Each kind of JPEG, PNG and WebP file, made by ImageMagick from a picture made here, decoded and
// compared with two other decoders: Pillow as the Hugging Face processors use it (the same samples
// are required) and ImageMagick itself (the same samples for lossless files and 16-bit PNGs; for
// JPEG within kJpegTolerance, room for another IDCT or CMYK rounding in ImageMagick).
#include "core/image/ImageDecoder.h"
#include "core/image/ImageError.h"
#include "tests/core/image/ImageTools.h"
#include "tests/support/Process.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <jpeglib.h>

using namespace parallax;
using namespace parallax::testing;

namespace {

// ImageMagick against this decoder on JPEG: the largest difference of a sample, and of the mean.
// Measured on Debian 12 (ImageMagick 6.9.11 Q16, libjpeg-turbo 2.1.5): 0 and 0 for every kind, as
// both decode with libjpeg-turbo's integer IDCT; 1 leaves room for rounding in the CMYK conversion.
constexpr int kJpegTolerance = 1;
constexpr double kJpegMeanTolerance = 0.05;

class Decode : public ::testing::Test {
protected:
    std::string make(const std::string& name, const Image16& picture, int bits, const std::vector<std::string>& args) {
        return makeImage(dir.path(), name, picture, bits, args);
    }

    // Decoded pixels equal Pillow's, alpha dropped and composited over white, and the headers agree.
    void expectLikePillow(const std::vector<std::string>& paths, bool alsoOverWhite = true) {
        const std::vector<Image> drop = pilRgbAll(paths);
        const std::vector<Image> white = alsoOverWhite ? pilRgbAll(paths, true) : std::vector<Image>(paths.size());
        for (size_t i = 0; i < paths.size(); ++i) {
            SCOPED_TRACE(paths[i]);
            const DecodedImage d = decodeImageFile(paths[i]);
            const PixelDiff dropped = compareImages(d.rgb, drop[i]);
            EXPECT_EQ(dropped.max, 0) << "mean " << dropped.mean;
            if (alsoOverWhite) {
                DecodeOptions overWhite;
                overWhite.alpha = AlphaMode::OverWhite;
                const PixelDiff over = compareImages(decodeImageFile(paths[i], overWhite).rgb, white[i]);
                EXPECT_EQ(over.max, 0) << "over white, mean " << over.mean;
            }
            const ImageInfo info = readImageInfoFile(paths[i]);
            EXPECT_EQ(info.width, d.rgb.width);
            EXPECT_EQ(info.height, d.rgb.height);
            EXPECT_EQ(info.format, d.info.format);
            EXPECT_EQ(info.alpha, d.info.alpha);
        }
    }

    void expectLikeMagick(const std::string& path) {
        SCOPED_TRACE(path);
        const PixelDiff diff = compareImages(decodeImageFile(path).rgb, magickRgb(path));
        EXPECT_EQ(diff.max, 0) << "mean " << diff.mean;
    }

    TempDir dir;
};

// The bit depth and colour type of a PNG's IHDR, as "depth/type", so that each kind is known to
// be the one made.
std::string pngKind(const std::string& path) {
    const std::string bytes = readFile(path);
    if (bytes.size() < 29) return "?";
    return std::to_string(static_cast<uint8_t>(bytes[24])) + "/" + std::to_string(static_cast<uint8_t>(bytes[25]));
}

bool holds(const std::string& path, const std::string& what) { return readFile(path).find(what) != std::string::npos; }

TEST_F(Decode, EightBitPngsEqualImageMagickAndPillow) {
    REQUIRE_CONVERT();
    REQUIRE_PIL();
    const std::string rgb = make("rgb.png", testPicture(37, 23, 3, 1), 8, {"PNG24:"});
    const std::string rgba = make("rgba.png", testPicture(37, 23, 4, 2), 8, {"PNG32:"});
    for (const std::string& path : {rgb, rgba}) expectLikeMagick(path);
    expectLikePillow({rgb, rgba});
    const DecodedImage d = decodeImageFile(rgba);
    EXPECT_EQ(d.info.format, ImageFormat::Png);
    EXPECT_TRUE(d.info.alpha);
    EXPECT_EQ(d.info.storedChannels, 4);
    EXPECT_EQ(d.rgb.channels, 3);
    EXPECT_EQ(d.rgb.width, 37);
    EXPECT_EQ(d.rgb.height, 23);
    // Alpha dropped: the stored colours, also where the picture is fully transparent.
    EXPECT_EQ(compareImages(d.rgb, eightBit(testPicture(37, 23, 3, 2))).max, 0);
}

TEST_F(Decode, SixteenBitPngsKeepSixteenBitsAndTheirHighBytes) {
    REQUIRE_CONVERT();
    REQUIRE_PIL();
    DecodeOptions keep;
    keep.keep16 = true;
    const std::string rgb = make("rgb16.png", testPicture(29, 31, 3, 3), 16, {"PNG48:"});
    const std::string rgba = make("rgba16.png", testPicture(29, 31, 4, 4), 16, {"PNG64:"});
    for (const std::string& path : {rgb, rgba}) {
        SCOPED_TRACE(path);
        const DecodedImage d = decodeImageFile(path, keep);
        EXPECT_EQ(d.info.bitDepth, 16);
        EXPECT_EQ(compareImages(d.rgb16, magickRgb16(path)).max, 0);
        EXPECT_TRUE(decodeImageFile(path).rgb16.samples.empty()) << "16 bits only on request";
    }
    expectLikePillow({rgb, rgba}); // Pillow reads 16-bit colour by its high bytes
    // The 16-bit samples are the picture's own.
    const DecodedImage d = decodeImageFile(rgb, keep);
    Image16 expected = testPicture(29, 31, 3, 3);
    EXPECT_EQ(compareImages(d.rgb16, expected).max, 0);
}

TEST_F(Decode, GrayPngsOfEveryDepthRepeatGrayInRgb) {
    REQUIRE_CONVERT();
    REQUIRE_PIL();
    const Image16 gray = testPicture(33, 19, 1, 5), grayAlpha = testPicture(33, 19, 2, 6);
    std::vector<std::string> eightBitOrLess;
    for (int bits : {1, 2, 4, 8}) {
        const std::string path =
            make("gray" + std::to_string(bits) + ".png", gray, 8,
                 {"-define", "png:color-type=0", "-define", "png:bit-depth=" + std::to_string(bits)});
        EXPECT_EQ(pngKind(path), std::to_string(bits) + "/0");
        expectLikeMagick(path);
        EXPECT_EQ(readImageInfoFile(path).storedChannels, 1);
        eightBitOrLess.push_back(path);
    }
    const std::string ga = make("gray-alpha.png", grayAlpha, 8, {"-define", "png:color-type=4"});
    EXPECT_EQ(pngKind(ga), "8/4");
    expectLikeMagick(ga);
    eightBitOrLess.push_back(ga);
    expectLikePillow(eightBitOrLess);
    EXPECT_EQ(readImageInfoFile(ga).storedChannels, 2);

    // 16-bit gray: the 16 bits are ImageMagick's, the 8-bit samples their high bytes. (Pillow makes
    // 16-bit gray white wherever it exceeds 255, in mode "I", and is not followed there.)
    DecodeOptions keep;
    keep.keep16 = true;
    for (const auto& [name, picture, type] : {std::make_tuple("gray16.png", gray, "0"),
                                               std::make_tuple("gray-alpha16.png", grayAlpha, "4")}) {
        const std::string path =
            make(name, picture, 16, {"-define", std::string("png:color-type=") + type, "-define", "png:bit-depth=16"});
        SCOPED_TRACE(path);
        EXPECT_EQ(pngKind(path), std::string("16/") + type);
        const DecodedImage d = decodeImageFile(path, keep);
        EXPECT_EQ(compareImages(d.rgb16, magickRgb16(path)).max, 0);
        for (size_t i = 0; i < d.rgb.samples.size(); ++i)
            ASSERT_EQ(d.rgb.samples[i], d.rgb16.samples[i] >> 8) << "sample " << i;
    }
}

TEST_F(Decode, PalettePngsWithTransparencyAndColourKeys) {
    REQUIRE_CONVERT();
    REQUIRE_PIL();
    const std::string palette = make("palette.png", testPicture(40, 30, 4, 7, 6), 8, {"PNG8:"});
    const std::string palette4 =
        make("palette4.png", testPicture(40, 30, 3, 8, 2), 8, {"-define", "png:bit-depth=4", "-define", "png:color-type=3"});
    const std::string key = make("colour-key.png", testPicture(40, 30, 4, 9, 4), 8, {"-define", "png:color-type=2"});
    EXPECT_EQ(pngKind(palette), "8/3");
    EXPECT_EQ(pngKind(palette4), "4/3");
    EXPECT_EQ(pngKind(key), "8/2");
    EXPECT_TRUE(holds(palette, "tRNS"));
    EXPECT_TRUE(holds(key, "tRNS"));
    for (const std::string& path : {palette, palette4, key}) expectLikeMagick(path);
    expectLikePillow({palette, palette4, key});
    EXPECT_TRUE(readImageInfoFile(palette).alpha) << "tRNS is transparency";
    EXPECT_TRUE(readImageInfoFile(key).alpha);
    EXPECT_FALSE(readImageInfoFile(palette4).alpha);
}

TEST_F(Decode, InterlacedPngs) {
    REQUIRE_CONVERT();
    REQUIRE_PIL();
    const std::string rgb = make("adam7.png", testPicture(41, 27, 3, 10), 8, {"-interlace", "PNG", "PNG24:"});
    const std::string rgba16 = make("adam7-16.png", testPicture(41, 27, 4, 11), 16, {"-interlace", "PNG", "PNG64:"});
    const std::string palette = make("adam7-palette.png", testPicture(41, 27, 4, 12, 5), 8, {"-interlace", "PNG", "PNG8:"});
    for (const std::string& path : {rgb, palette}) expectLikeMagick(path);
    expectLikePillow({rgb, rgba16, palette});
    for (const std::string& path : {rgb, rgba16, palette}) EXPECT_EQ(readFile(path)[28], 1) << "Adam7: " << path;
    EXPECT_EQ(pngKind(rgba16), "16/6");
    EXPECT_EQ(pngKind(palette), "8/3");
}

// A JPEG written here through libjpeg: `in` samples (3 or 4 a pixel) stored as `stored`.
void writeJpeg(const std::string& path, const Image& in, J_COLOR_SPACE inSpace, J_COLOR_SPACE stored) {
    jpeg_compress_struct c{};
    jpeg_error_mgr err{};
    c.err = jpeg_std_error(&err);
    jpeg_create_compress(&c);
    FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    jpeg_stdio_dest(&c, f);
    c.image_width = static_cast<JDIMENSION>(in.width);
    c.image_height = static_cast<JDIMENSION>(in.height);
    c.input_components = in.channels;
    c.in_color_space = inSpace;
    jpeg_set_defaults(&c);
    jpeg_set_colorspace(&c, stored);
    jpeg_set_quality(&c, 92, TRUE);
    jpeg_start_compress(&c, TRUE);
    while (c.next_scanline < c.image_height) {
        JSAMPROW row = const_cast<uint8_t*>(in.row(static_cast<int>(c.next_scanline)));
        jpeg_write_scanlines(&c, &row, 1);
    }
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    std::fclose(f);
}

TEST_F(Decode, JpegsOfEveryColourSpaceEqualPillowAndImageMagickWithinTheIdctTolerance) {
    REQUIRE_CONVERT();
    REQUIRE_PIL();
    const Image16 picture = testPicture(45, 35, 3, 13);
    std::vector<std::pair<std::string, int>> files = {
        {make("ycbcr420.jpg", picture, 8, {"-quality", "90"}), 3},
        {make("ycbcr444.jpg", picture, 8, {"-quality", "90", "-sampling-factor", "1x1"}), 3},
        {make("progressive.jpg", picture, 8, {"-quality", "85", "-interlace", "JPEG"}), 3},
        {make("gray.jpg", testPicture(45, 35, 1, 14), 8, {"-quality", "90"}), 1},
        {make("cmyk.jpg", picture, 8, {"-colorspace", "CMYK", "-quality", "90"}), 4},
    };
    const Image rgb = eightBit(picture);
    writeJpeg(dir.path() + "/rgb.jpg", rgb, JCS_RGB, JCS_RGB);
    files.push_back({dir.path() + "/rgb.jpg", 3});
    // YCCK: CMYK samples (Adobe-inverted, as Photoshop stores them) in YCC with K.
    Image cmyk;
    cmyk.width = rgb.width;
    cmyk.height = rgb.height;
    cmyk.channels = 4;
    for (size_t i = 0; i < rgb.samples.size(); i += 3) {
        const uint8_t k = std::min({255 - rgb.samples[i], 255 - rgb.samples[i + 1], 255 - rgb.samples[i + 2]}) / 2;
        for (int c = 0; c < 3; ++c) cmyk.samples.push_back(static_cast<uint8_t>(255 - (255 - rgb.samples[i + c] - k)));
        cmyk.samples.push_back(static_cast<uint8_t>(255 - k));
    }
    writeJpeg(dir.path() + "/ycck.jpg", cmyk, JCS_CMYK, JCS_YCCK);
    files.push_back({dir.path() + "/ycck.jpg", 4});

    EXPECT_TRUE(holds(files[2].first, "\xFF\xC2")) << "progressive (SOF2)";
    EXPECT_TRUE(holds(files[4].first, "Adobe"));
    std::vector<std::string> paths;
    for (const auto& file : files) paths.push_back(file.first);
    expectLikePillow(paths, false);
    for (const auto& [path, channels] : files) {
        SCOPED_TRACE(path);
        const DecodedImage d = decodeImageFile(path);
        EXPECT_EQ(d.info.storedChannels, channels);
        const PixelDiff magick = compareImages(d.rgb, magickRgb(path));
        EXPECT_LE(magick.max, kJpegTolerance);
        EXPECT_LE(magick.mean, kJpegMeanTolerance);
        std::printf("%-16s against ImageMagick: max %d, mean %.4f\n", path.substr(path.rfind('/') + 1).c_str(),
                    magick.max, magick.mean);
    }
}

TEST_F(Decode, WebpLossyLosslessAndAlpha) {
    REQUIRE_CONVERT();
    REQUIRE_PIL();
    const std::string lossless = make("lossless.webp", testPicture(38, 26, 3, 15), 8, {"-define", "webp:lossless=true"});
    const std::string losslessAlpha =
        make("lossless-alpha.webp", testPicture(38, 26, 4, 16), 8, {"-define", "webp:lossless=true"});
    const std::string lossy = make("lossy.webp", testPicture(38, 26, 3, 17), 8, {"-quality", "80"});
    const std::string lossyAlpha = make("lossy-alpha.webp", testPicture(38, 26, 4, 18), 8, {"-quality", "80"});
    EXPECT_TRUE(holds(lossless, "VP8L"));
    EXPECT_TRUE(holds(losslessAlpha, "VP8L"));
    EXPECT_TRUE(holds(lossy, "VP8 "));
    EXPECT_TRUE(holds(lossyAlpha, "ALPH"));
    for (const std::string& path : {lossless, losslessAlpha, lossy, lossyAlpha}) {
        expectLikeMagick(path); // libwebp in both: the same samples, lossy too
    }
    expectLikePillow({lossless, losslessAlpha, lossy, lossyAlpha});
    EXPECT_EQ(compareImages(decodeImageFile(lossless).rgb, eightBit(testPicture(38, 26, 3, 15))).max, 0);
    EXPECT_TRUE(readImageInfoFile(lossyAlpha).alpha);
    EXPECT_FALSE(readImageInfoFile(lossy).alpha);
}

TEST_F(Decode, AnimatedWebpGivesItsFirstFrame) {
    REQUIRE_CONVERT();
    REQUIRE_PIL();
    std::vector<std::string> args = {"-delay", "10", "-dispose", "background"};
    for (int frame = 0; frame < 3; ++frame) {
        const std::string pam = dir.path() + "/frame" + std::to_string(frame) + ".pam";
        writePam(pam, testPicture(30, 20, 4, 20 + frame), 8);
        args.push_back(pam);
    }
    args.insert(args.end(), {"-define", "webp:lossless=true", dir.path() + "/animated.webp"});
    ASSERT_TRUE(convert(args));
    const std::string path = dir.path() + "/animated.webp";
    const DecodedImage d = decodeImageFile(path);
    EXPECT_TRUE(d.info.animated);
    EXPECT_TRUE(holds(path, "ANMF"));
    expectLikePillow({path});
}

TEST_F(Decode, FormatIsToldByTheBytesNotTheName) {
    REQUIRE_CONVERT();
    const std::string png = make("picture.jpg", testPicture(16, 12, 3, 30), 8, {"PNG24:"});
    const std::string jpeg = make("picture.webp", testPicture(16, 12, 3, 31), 8, {"JPEG:"});
    const std::string webp = make("picture", testPicture(16, 12, 3, 32), 8, {"WEBP:"});
    EXPECT_EQ(decodeImageFile(png).info.format, ImageFormat::Png);
    EXPECT_EQ(decodeImageFile(jpeg).info.format, ImageFormat::Jpeg);
    EXPECT_EQ(decodeImageFile(webp).info.format, ImageFormat::Webp);
}

} // namespace
