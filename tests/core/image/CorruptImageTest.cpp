// Files that are no usable image: each a clear error naming the file and the reason, never a crash,
// a hang or an allocation of what the file claims.
#include "core/image/ImageDecoder.h"
#include "core/image/ImageError.h"
#include "tests/core/image/ImageTools.h"
#include "tests/support/PeakMemory.h"
#include "tests/support/Process.h"

#include <gtest/gtest.h>

#include <sys/stat.h>

using namespace parallax;
using namespace parallax::testing;

namespace {

// The reason decoding `path` gives; fails the test when it decodes or throws anything but an
// ImageError naming the file.
std::string reasonFor(const std::string& path, const DecodeOptions& options = {}) {
    try {
        decodeImageFile(path, options);
    } catch (const ImageError& e) {
        EXPECT_EQ(e.file(), path);
        EXPECT_EQ(std::string(e.what()), path + ": " + e.reason());
        return e.reason();
    } catch (const std::exception& e) {
        ADD_FAILURE() << path << ": not an ImageError: " << e.what();
        return "";
    }
    ADD_FAILURE() << path << " decoded";
    return "";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

class Corrupt : public ::testing::Test {
protected:
    std::string file(const std::string& name, const std::string& bytes) {
        const std::string path = dir.path() + "/" + name;
        writeFileBytes(path, bytes);
        return path;
    }
    // The kinds of file cut and damaged below.
    std::vector<std::string> samples() {
        const Image16 rgb = testPicture(48, 36, 3, 70), rgba = testPicture(48, 36, 4, 71);
        return {
            makeImage(dir.path(), "baseline.jpg", rgb, 8, {"-quality", "90"}),
            makeImage(dir.path(), "progressive.jpg", rgb, 8, {"-quality", "90", "-interlace", "JPEG"}),
            makeImage(dir.path(), "rgba.png", rgba, 8, {"PNG32:"}),
            makeImage(dir.path(), "adam7-16.png", rgba, 16, {"-interlace", "PNG", "PNG64:"}),
            makeImage(dir.path(), "palette.png", testPicture(48, 36, 4, 72, 5), 8, {"PNG8:"}),
            makeImage(dir.path(), "lossy.webp", rgb, 8, {"-quality", "75"}),
            makeImage(dir.path(), "lossy-alpha.webp", rgba, 8, {"-quality", "75"}),
            makeImage(dir.path(), "lossless.webp", rgba, 8, {"-define", "webp:lossless=true"}),
        };
    }
    TempDir dir;
};

TEST_F(Corrupt, EmptyTextAndOtherFormatsAreNamed) {
    EXPECT_TRUE(contains(reasonFor(file("empty.png", "")), "empty file (0 bytes)"));
    EXPECT_TRUE(contains(reasonFor(file("notes.png", "a caption, not a picture\n")), "a text file, not an image"));
    EXPECT_TRUE(contains(reasonFor(file("noise.jpg", std::string("\x01\x02\x03\x80\x90", 5))), "starts with bytes 01 02 03 80 90"));
    EXPECT_TRUE(contains(reasonFor(dir.path() + "/missing.jpg"), "no such file"));
    EXPECT_TRUE(contains(reasonFor(dir.path()), "a folder, not an image file"));
    const std::string fifo = dir.path() + "/pipe.jpg"; // opening it must not wait for a writer
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    EXPECT_TRUE(contains(reasonFor(fifo), "not a regular file"));
    REQUIRE_CONVERT();
    for (const auto& [name, format] : {std::pair<std::string, std::string>{"anim.gif", "GIF"}, {"scan.bmp", "BMP"},
                                       {"scan.tif", "TIFF"}, {"pic.ppm", "PNM"}}) {
        const std::string path = makeImage(dir.path(), name, testPicture(8, 8, 3, 73), 8, {});
        const std::string reason = reasonFor(path);
        EXPECT_TRUE(contains(reason, format)) << reason;
        EXPECT_TRUE(contains(reason, "only JPEG, PNG and WebP images are read")) << reason;
    }
}

TEST_F(Corrupt, TruncatedAtEveryFewPercentIsNamedTruncated) {
    REQUIRE_CONVERT();
    for (const std::string& path : samples()) {
        const std::string bytes = readFile(path);
        for (double at : {0.02, 0.1, 0.25, 0.5, 0.75, 0.9, 0.97}) {
            const std::string cut = file("cut-" + std::to_string(int(at * 100)) + "-" + path.substr(path.rfind('/') + 1),
                                         bytes.substr(0, static_cast<size_t>(bytes.size() * at)));
            const std::string reason = reasonFor(cut);
            EXPECT_TRUE(contains(reason, "truncated")) << cut << ": " << reason;
        }
        // A file cut by one byte: PNG loses its IEND's CRC, WebP a byte of its RIFF size.
        if (!contains(path, ".jpg")) {
            const std::string last = file("less-one-" + path.substr(path.rfind('/') + 1), bytes.substr(0, bytes.size() - 1));
            EXPECT_TRUE(contains(reasonFor(last), "truncated")) << last;
        }
    }
}

TEST_F(Corrupt, TruncatedJpegNamesTheMissingDataAndHeadersAloneStillRead) {
    REQUIRE_CONVERT();
    const std::string path = makeImage(dir.path(), "photo.jpg", testPicture(64, 64, 3, 74), 8, {"-quality", "90"});
    const std::string bytes = readFile(path);
    const std::string half = file("half.jpg", bytes.substr(0, bytes.size() / 2));
    EXPECT_EQ(reasonFor(half), "truncated JPEG (premature end of data segment: the file ends inside the image data)");
    EXPECT_EQ(readImageInfoFile(half).width, 64) << "the headers are whole";
    EXPECT_EQ(reasonFor(file("head.jpg", bytes.substr(0, 40))), "truncated JPEG (premature end of file)");
    // Only the EOI marker missing: every row is there, as Pillow also decodes it.
    const std::string noEnd = file("no-eoi.jpg", bytes.substr(0, bytes.size() - 2));
    EXPECT_EQ(compareImages(decodeImageFile(noEnd).rgb, decodeImageFile(path).rgb).max, 0);
}

TEST_F(Corrupt, ByteFlipsInPngDataFailTheirCrcAndOthersDecodeOrFail) {
    REQUIRE_CONVERT();
    for (const std::string& path : samples()) {
        const std::string bytes = readFile(path);
        for (int i = 1; i <= 9; ++i) {
            std::string damaged = bytes;
            const size_t at = damaged.size() * i / 10;
            damaged[at] = static_cast<char>(damaged[at] ^ 0x5A);
            const std::string flipped = file("flip-" + std::to_string(i) + "-" + path.substr(path.rfind('/') + 1), damaged);
            try {
                const DecodedImage d = decodeImageFile(flipped);
                EXPECT_FALSE(contains(path, ".png")) << flipped << ": a PNG with a changed byte decoded";
                EXPECT_EQ(d.rgb.samples.size(), static_cast<size_t>(d.rgb.width) * d.rgb.height * 3);
            } catch (const ImageError& e) {
                EXPECT_EQ(e.file(), flipped);
                if (contains(path, ".png")) {
                    EXPECT_TRUE(contains(e.reason(), "corrupt PNG")) << e.reason();
                }
            }
        }
    }
}

TEST_F(Corrupt, HugeDeclaredSidesAreRefusedFromTheHeaderBeforeAnyAllocation) {
    // A PNG that claims 100000 x 100000 pixels, with a few bytes of data.
    std::string ihdr = bigEndian(100000) + bigEndian(100000) + std::string("\x08\x02\0\0\0", 5);
    const std::string png = file("huge.png", std::string("\x89PNG\r\n\x1A\n", 8) + pngChunk("IHDR", ihdr) +
                                                 pngChunk("IDAT", std::string("\x78\x9C\x03\0\0\0\0\x01", 8)) +
                                                 pngChunk("IEND", ""));
    const bool measured = resetPeakRss();
    const int64_t before = procStatusBytes("VmRSS");
    const std::string reason = reasonFor(png);
    if (measured) {
        EXPECT_LT(procStatusBytes("VmHWM") - before, 64 << 20) << "bytes allocated refusing it";
    }
    EXPECT_EQ(reason, "PNG of 100000 x 100000 = 10000000000 pixels, more than the 178956970 an image may have "
                      "(a decompression bomb, or a picture to scale down before training)");
    try {
        readImageInfoFile(png);
        ADD_FAILURE() << "the headers of a huge PNG were accepted";
    } catch (const ImageError& e) {
        EXPECT_EQ(e.reason(), reason);
    }

    REQUIRE_CONVERT();
    // A JPEG whose SOF0 says 65500 x 65500, and a lossless WebP whose header says 16384 x 16384.
    std::string jpeg = readFile(makeImage(dir.path(), "small.jpg", testPicture(16, 16, 3, 75), 8, {}));
    const size_t sof = jpeg.find("\xFF\xC0");
    ASSERT_NE(sof, std::string::npos);
    jpeg.replace(sof + 5, 4, std::string("\xFF\xDC\xFF\xDC", 4));
    EXPECT_TRUE(contains(reasonFor(file("huge.jpg", jpeg)), "JPEG of 65500 x 65500 = 4290250000 pixels, more than"));
    std::string webp = readFile(makeImage(dir.path(), "small.webp", testPicture(16, 16, 3, 76), 8,
                                               {"-define", "webp:lossless=true"}));
    ASSERT_EQ(webp.substr(12, 4), "VP8L");
    webp[21] = '\xFF', webp[22] = '\xFF', webp[23] = '\xFF';
    webp[24] = static_cast<char>(webp[24] | 0x0F);
    EXPECT_TRUE(contains(reasonFor(file("huge.webp", webp)), "WebP of 16384 x 16384 = 268435456 pixels, more than"));

    // The limit is an option: a small one refuses a small image.
    DecodeOptions strict;
    strict.maxPixels = 100;
    EXPECT_TRUE(contains(reasonFor(dir.path() + "/small.jpg", strict), "256 pixels, more than the 100"));
}

TEST_F(Corrupt, ZeroSidesAreCorrupt) {
    std::string ihdr = bigEndian(0) + bigEndian(10) + std::string("\x08\x02\0\0\0", 5);
    const std::string png = file("zero.png", std::string("\x89PNG\r\n\x1A\n", 8) + pngChunk("IHDR", ihdr) + pngChunk("IEND", ""));
    EXPECT_TRUE(contains(reasonFor(png), "corrupt PNG")) << reasonFor(png);
}

} // namespace
