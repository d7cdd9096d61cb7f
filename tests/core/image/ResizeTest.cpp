// The bicubic and Lanczos resizes against Pillow's (sample for sample, on noise and on pictures, shrinking,
// growing, one side kept) and against ImageMagick's Catmull-Rom (-filter Catrom, the same a = -0.5
// kernel, within kMagickTolerance); normalization and Qwen2-VL's smart_resize against pil_ref.py.
#include "core/image/BicubicResize.h"
#include "core/image/ImageDecoder.h"
#include "core/image/ImageNormalize.h"
#include "core/image/SmartResize.h"
#include "tests/core/image/ImageTools.h"
#include "tests/support/Process.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <sstream>

using namespace parallax;
using namespace parallax::testing;

namespace {

// ImageMagick's -filter Catrom -resize (the same kernel: Keys' cubic, B = 0, C = 0.5; "-filter Cubic
// -define filter:b=0 -define filter:c=0.5" gives the same samples) against this resize, on the
// 8-bit picture of testPicture. Measured on Debian 12 (ImageMagick 6.9.11 Q16), 400 x 300 to:
//   175 x 131: max 1, mean 0.50, 0% of the samples more than 1 apart
//   56 x 42: max 2, mean 0.50, 0.07%       401 x 299: max 2, mean 0.49, 0.01%
//   448 x 336: max 18, mean 0.53, 1.04%    800 x 600: max 21, mean 0.56, 1.20%
// ImageMagick comes out half a level lower on average (it rounds its 16-bit result down where this
// and Pillow round to nearest), and where it enlarges it filters columns before rows, so that the
// overshoot at hard edges is clamped at another stage: a few samples there differ by up to 21.
constexpr int kMagickShrinkTolerance = 2;  // largest difference of a sample when shrinking
constexpr int kMagickGrowTolerance = 24;   // when enlarging, at clamped edges
constexpr double kMagickMeanTolerance = 0.6;
constexpr double kMagickFarShare = 0.02;   // share of samples more than 1 apart

Image noise(int width, int height, int channels, uint32_t seed) {
    std::mt19937 rng(seed);
    Image im;
    im.width = width;
    im.height = height;
    im.channels = channels;
    im.samples.resize(static_cast<size_t>(width) * height * channels);
    for (uint8_t& s : im.samples) s = static_cast<uint8_t>(rng() & 255);
    return im;
}

struct Sides {
    int width, height;
};

TEST(Resize, EqualsPillowSampleForSample) {
    REQUIRE_PIL();
    const std::vector<std::pair<Sides, std::vector<Sides>>> cases = {
        {{64, 48}, {{32, 24}, {13, 7}, {1, 1}, {64, 24}, {32, 48}, {100, 75}, {63, 47}, {65, 49}, {200, 150}}},
        {{1024, 768}, {{448, 336}, {224, 224}, {1000, 700}}},
        {{37, 23}, {{111, 69}, {36, 23}, {37, 22}, {5, 300}}},
        {{300, 17}, {{7, 300}, {299, 16}, {28, 28}}},
        {{1, 1}, {{9, 4}}},
    };
    uint32_t seed = 1;
    std::vector<std::unique_ptr<Image>> sources;
    std::vector<ResizeJob> jobs;
    for (const auto& [in, outs] : cases) {
        for (int channels : {1, 3}) {
            sources.push_back(std::make_unique<Image>(noise(in.width, in.height, channels, seed++)));
            const Image* noisy = sources.back().get();
            if (channels == 3) sources.push_back(std::make_unique<Image>(eightBit(testPicture(in.width, in.height, 3, seed++))));
            const Image* picture = sources.back().get();
            for (const Sides& out : outs) {
                jobs.push_back({noisy, out.width, out.height});
                if (picture != noisy) jobs.push_back({picture, out.width, out.height});
            }
        }
    }
    const std::vector<Image> pillow = pilResizeAll(jobs);
    for (size_t i = 0; i < jobs.size(); ++i) {
        const ResizeJob& job = jobs[i];
        SCOPED_TRACE(std::to_string(job.image->width) + "x" + std::to_string(job.image->height) + " -> " +
                     std::to_string(job.width) + "x" + std::to_string(job.height) + ", " +
                     std::to_string(job.image->channels) + " channels");
        const Image ours = resizeBicubic(*job.image, job.width, job.height);
        EXPECT_EQ(ours.width, job.width);
        EXPECT_EQ(ours.height, job.height);
        const PixelDiff d = compareImages(ours, pillow[i]);
        EXPECT_EQ(d.max, 0) << "mean " << d.mean;
    }
    EXPECT_EQ(jobs.size(), 60u);
}

// Lanczos (as diffusers' VaeImageProcessor resizes) on noise and pictures, shrinking and growing.
TEST(Resize, LanczosEqualsPillowSampleForSample) {
    REQUIRE_PIL();
    const std::vector<std::pair<Sides, std::vector<Sides>>> cases = {
        {{64, 48}, {{32, 24}, {13, 7}, {1, 1}, {100, 75}, {63, 47}}},
        {{37, 23}, {{111, 69}, {36, 23}, {5, 300}}},
        {{300, 17}, {{7, 300}, {28, 28}}},
    };
    uint32_t seed = 100;
    std::vector<std::unique_ptr<Image>> sources;
    std::vector<ResizeJob> jobs;
    for (const auto& [in, outs] : cases) {
        sources.push_back(std::make_unique<Image>(noise(in.width, in.height, 3, seed++)));
        sources.push_back(std::make_unique<Image>(eightBit(testPicture(in.width, in.height, 3, seed++))));
        for (const Sides& out : outs)
            for (size_t k = sources.size() - 2; k < sources.size(); ++k) jobs.push_back({sources[k].get(), out.width, out.height});
    }
    const std::vector<Image> pillow = pilResizeAll(jobs, /*lanczos=*/true);
    for (size_t i = 0; i < jobs.size(); ++i) {
        const ResizeJob& job = jobs[i];
        SCOPED_TRACE(std::to_string(job.image->width) + "x" + std::to_string(job.image->height) + " -> " +
                     std::to_string(job.width) + "x" + std::to_string(job.height));
        const PixelDiff d = compareImages(resizeLanczos(*job.image, job.width, job.height), pillow[i]);
        EXPECT_EQ(d.max, 0) << "mean " << d.mean;
    }
    EXPECT_EQ(jobs.size(), 20u);
    // Not the bicubic resize under another name.
    EXPECT_GT(compareImages(resizeBicubic(*jobs[0].image, 32, 24), pillow[0]).max, 0);
}

TEST(Resize, SameSidesCopiesAndBadSidesAreRefused) {
    const Image im = noise(10, 8, 3, 7);
    EXPECT_EQ(resizeBicubic(im, 10, 8).samples, im.samples);
    EXPECT_THROW(resizeBicubic(im, 0, 8), std::invalid_argument);
    EXPECT_THROW(resizeBicubic(im, 8, -1), std::invalid_argument);
    EXPECT_THROW(resizeBicubic(im, 100000, 100000), std::invalid_argument);
    EXPECT_THROW(resizeBicubic(Image{}, 4, 4), std::invalid_argument);
    Image wrong = im;
    wrong.samples.pop_back();
    EXPECT_THROW(resizeBicubic(wrong, 4, 4), std::invalid_argument);
}

TEST(Resize, AgainstImageMagickCatmullRomWithinTheTolerance) {
    REQUIRE_CONVERT();
    TempDir dir;
    const Image16 picture = testPicture(400, 300, 3, 50);
    const std::string pam = dir.path() + "/picture.pam";
    writePam(pam, picture, 8);
    for (const Sides& out : std::vector<Sides>{{175, 131}, {56, 42}, {401, 299}, {448, 336}, {800, 600}}) {
        const std::string path = dir.path() + "/magick.png";
        const std::string size = std::to_string(out.width) + "x" + std::to_string(out.height);
        ASSERT_TRUE(convert({pam, "-filter", "Catrom", "-resize", size + "!", "PNG24:" + path}));
        const Image ours = resizeBicubic(eightBit(picture), out.width, out.height);
        const Image magick = decodeImageFile(path).rgb;
        const PixelDiff d = compareImages(ours, magick);
        ASSERT_GE(d.max, 0) << "sides differ";
        size_t far = 0;
        for (size_t i = 0; i < ours.samples.size(); ++i) far += std::abs(ours.samples[i] - magick.samples[i]) > 1;
        const double farShare = static_cast<double>(far) / static_cast<double>(ours.samples.size());
        std::printf("400x300 -> %s against ImageMagick -filter Catrom: max %d, mean %.4f, %.3f%% more than 1 apart\n",
                    size.c_str(), d.max, d.mean, 100 * farShare);
        const bool shrinks = out.width * out.height < 400 * 300 && out.width <= 400 && out.height <= 300;
        EXPECT_LE(d.max, shrinks ? kMagickShrinkTolerance : kMagickGrowTolerance) << size;
        EXPECT_LE(d.mean, kMagickMeanTolerance) << size;
        EXPECT_LE(farShare, kMagickFarShare) << size;
    }
}

TEST(Resize, DecodedAndResizedEqualsPillowEndToEnd) {
    REQUIRE_CONVERT();
    REQUIRE_PIL();
    TempDir dir;
    const std::string jpeg = makeImage(dir.path(), "photo.jpg", testPicture(333, 250, 3, 51), 8, {"-quality", "90"});
    ASSERT_TRUE(setOrientation(jpeg, 6) || !haveExiftool());
    const DecodedImage d = decodeImageFile(jpeg);
    const Image ours = resizeBicubic(d.rgb, 140, 196);
    const std::string raw = dir.path() + "/pil.rgb";
    const ProcessResult r = runProcess({PARALLAX_PIL_PYTHON, "-W", "ignore", PARALLAX_PIL_REF, "resize", jpeg, raw, "140", "196"});
    ASSERT_EQ(r.exitCode, 0) << r.output;
    const std::string bytes = readFile(raw);
    ASSERT_EQ(bytes.size(), ours.samples.size());
    EXPECT_EQ(std::memcmp(bytes.data(), ours.samples.data(), bytes.size()), 0);
}

TEST(Normalize, EqualsTheProcessorsFloat32ArithmeticChannelsFirst) {
    REQUIRE_PIL();
    TempDir dir;
    Image im = noise(17, 9, 3, 60);
    for (int v = 0; v < 256; ++v) im.samples[static_cast<size_t>(v)] = static_cast<uint8_t>(v); // every value
    const std::string in = dir.path() + "/in.rgb", out = dir.path() + "/out.f32";
    writeFileBytes(in, std::string(im.samples.begin(), im.samples.end()));
    const ProcessResult r = runProcess({PARALLAX_PIL_PYTHON, "-W", "ignore", PARALLAX_PIL_REF, "normalize", in, "17", "9", out});
    ASSERT_EQ(r.exitCode, 0) << r.output;
    const std::vector<float> ours = normalizeImage(im, kClipMean, kClipStd);
    const std::string expected = readFile(out);
    ASSERT_EQ(expected.size(), ours.size() * sizeof(float));
    for (size_t i = 0; i < ours.size(); ++i) {
        float e = 0;
        std::memcpy(&e, expected.data() + i * sizeof(float), sizeof e);
        ASSERT_EQ(ours[i], e) << "value " << i;
    }
    // Channels first: the first plane is red (pixel 1's red is sample 3, value 3), then green.
    EXPECT_FLOAT_EQ(ours[1], (float(3 * (1.0 / 255)) - float(kClipMean[0])) / float(kClipStd[0]));
    EXPECT_FLOAT_EQ(ours[17 * 9], (float(1 * (1.0 / 255)) - float(kClipMean[1])) / float(kClipStd[1]));
    EXPECT_THROW(normalizeImage(im, {0.5}, {0.5}), std::invalid_argument);
    EXPECT_THROW(normalizeImage(im, {0.5, 0.5, 0.5}, {0.5, 0.0, 0.5}), std::invalid_argument);
}

TEST(SmartResize, EqualsTheRuleInPython) {
    REQUIRE_PIL();
    TempDir dir;
    std::vector<std::vector<int64_t>> cases;
    const SmartResizeRule qwen;
    for (int64_t h : {1, 10, 14, 27, 28, 42, 56, 70, 98, 100, 333, 768, 1080, 2000, 4032, 9999})
        for (int64_t w : {1, 13, 28, 42, 70, 112, 250, 1024, 1920, 3024, 8000})
            if (std::max(h, w) <= 200 * std::min(h, w))
                for (const SmartResizeRule& rule : {qwen, SmartResizeRule{28, 3136, 1003520}, SmartResizeRule{16, 256, 65536}})
                    cases.push_back({h, w, rule.factor, rule.minPixels, rule.maxPixels});
    std::string lines;
    for (const auto& c : cases)
        lines += std::to_string(c[0]) + " " + std::to_string(c[1]) + " " + std::to_string(c[2]) + " " +
                 std::to_string(c[3]) + " " + std::to_string(c[4]) + "\n";
    writeFileBytes(dir.path() + "/cases.txt", lines);
    const ProcessResult r = runProcess({PARALLAX_PIL_PYTHON, PARALLAX_PIL_REF, "smart-resize", dir.path() + "/cases.txt"});
    ASSERT_EQ(r.exitCode, 0) << r.output;
    std::istringstream answers(r.output);
    for (const auto& c : cases) {
        int64_t h = 0, w = 0;
        ASSERT_TRUE(answers >> h >> w);
        const ImageSides ours = smartResize(c[0], c[1], SmartResizeRule{c[2], c[3], c[4]});
        EXPECT_EQ(ours.height, h) << c[0] << " x " << c[1] << " factor " << c[2];
        EXPECT_EQ(ours.width, w) << c[0] << " x " << c[1] << " factor " << c[2];
    }
    // Halves round to even, as Python's round(): 42 / 28 = 1.5 -> 2, 70 / 28 = 2.5 -> 2.
    EXPECT_EQ(smartResize(42, 70).height, 56);
    EXPECT_EQ(smartResize(42, 70).width, 56);
    EXPECT_THROW(smartResize(10, 2001), std::invalid_argument);
    EXPECT_THROW(smartResize(0, 20), std::invalid_argument);
}

} // namespace
