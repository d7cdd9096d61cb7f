#pragma once

// The image tests' tools: pictures made in the test, ImageMagick's convert to write them in each
// format and decode them again, exiftool to set EXIF orientations, and Pillow (pil_ref.py) as the
// oracle of what the Hugging Face processors see. Each tool is found at configure time; a test that
// needs one the machine lacks skips, saying which (packaging/deps.sh installs them all).
#include "core/image/Image.h"
#include "core/util/Files.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace parallax::testing {

bool haveConvert();
bool haveExiftool();
bool havePil();

#define REQUIRE_CONVERT() \
    if (!haveConvert()) GTEST_SKIP() << "ImageMagick's convert was not found at configure time (imagemagick)"
#define REQUIRE_EXIFTOOL() \
    if (!haveExiftool()) GTEST_SKIP() << "exiftool was not found at configure time (libimage-exiftool-perl)"
#define REQUIRE_PIL() \
    if (!havePil()) GTEST_SKIP() << "no Python 3 with Pillow was found at configure time (python3-pil)"

// A picture with smooth gradients, hard edges and noise, the same for the same seed: 16-bit samples,
// `channels` 1 (gray), 2 (gray + alpha), 3 (RGB) or 4 (RGBA; alpha 0 and 255 in places, ramps
// elsewhere). `levels` > 0 quantizes colour to that many levels a channel and alpha to 0 or 255
// (for palette images).
Image16 testPicture(int width, int height, int channels, uint32_t seed, int levels = 0);
// The picture's high bytes.
Image eightBit(const Image16& picture);

// A binary PAM (P7) file of the picture, with 8-bit (maxval 255) or 16-bit samples.
void writePam(const std::string& path, const Image16& picture, int bits);

// Runs a tool; fails the test (and returns false) when it exits non-zero, with its output.
bool runTool(const std::vector<std::string>& argv);
// ImageMagick's convert with these arguments.
bool convert(const std::vector<std::string>& args);
// `picture` written as a PAM of `bits` in `folder` and converted by ImageMagick with `args` into
// folder/name, whose path is returned; a last argument ending in ':' ("PNG24:") is the output's
// format.
std::string makeImage(const std::string& folder, const std::string& name, const Image16& picture, int bits,
                      std::vector<std::string> args);
// exiftool setting the EXIF orientation of `path` (1 to 8) in place; of many files in one run.
bool setOrientation(const std::string& path, int orientation);
bool setOrientations(const std::vector<std::pair<std::string, int>>& files);

// `path` decoded by ImageMagick, oriented by its EXIF orientation, alpha dropped: 8-bit or 16-bit RGB.
Image magickRgb(const std::string& path);
Image16 magickRgb16(const std::string& path);
// `path` decoded by Pillow as the Hugging Face processors decode it (pil_ref.py decode); many
// files in one run of Python.
Image pilRgb(const std::string& path, bool overWhite = false);
std::vector<Image> pilRgbAll(const std::vector<std::string>& paths, bool overWhite = false);
// `image` (1 or 3 channels) resized by Pillow's bicubic resize (Image.LANCZOS with `lanczos`); many
// in one run of Python.
struct ResizeJob {
    const Image* image;
    int width;
    int height;
};
Image pilResize(const Image& image, int width, int height);
std::vector<Image> pilResizeAll(const std::vector<ResizeJob>& jobs, bool lanczos = false);

// How far two images of the same sides and channels are apart: the largest and the mean absolute
// difference of a sample. `max` is -1 when their sides or channels differ.
struct PixelDiff {
    int max = -1;
    double mean = 0;
};
PixelDiff compareImages(const Image& a, const Image& b);
PixelDiff compareImages(const Image16& a, const Image16& b);

// Four bytes, most significant first.
std::string bigEndian(uint32_t value);
// A PNG chunk: length, type, body and CRC.
std::string pngChunk(const std::string& type, const std::string& body);
// Recomputes the CRC of every whole chunk of a PNG, so that damage inside a chunk reaches the
// decoder's deeper checks instead of stopping at the CRC.
void fixPngCrcs(std::string& png);

void writeFileBytes(const std::string& path, const std::string& bytes);

} // namespace parallax::testing
