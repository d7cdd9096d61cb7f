// Small images of every kind mutated at random (fixed seed): bits flipped, bytes set, spans cut,
// repeated or inserted, files truncated; PNGs half the time with their CRCs made right again, so
// that the damage reaches zlib and the filters. Every decode and header read either succeeds or
// throws an ImageError naming the file, quickly.
#include "core/image/ImageDecoder.h"
#include "core/image/ImageError.h"
#include "tests/core/image/ImageTools.h"
#include "tests/support/Process.h"

#include <gtest/gtest.h>

#include <chrono>
#include <random>

using namespace parallax;
using namespace parallax::testing;

namespace {

constexpr int kIterations = 4000;

std::string mutate(std::string bytes, std::mt19937& rng) {
    const int count = 1 + static_cast<int>(rng() % 4);
    for (int m = 0; m < count && !bytes.empty(); ++m) {
        const size_t at = rng() % bytes.size();
        switch (rng() % 7) {
        case 0: bytes[at] = static_cast<char>(bytes[at] ^ (1 << (rng() % 8))); break;
        case 1: bytes[at] = static_cast<char>(rng() & 255); break;
        case 2: bytes[at] = static_cast<char>(rng() % 2 ? 0xFF : 0x00); break;
        case 3: bytes.resize(at); break;
        case 4: bytes.erase(at, 1 + rng() % 16); break;
        case 5: bytes.insert(at, bytes.substr(at, 1 + rng() % 32)); break;
        case 6: {
            std::string noise(1 + rng() % 8, '\0');
            for (char& c : noise) c = static_cast<char>(rng() & 255);
            bytes.insert(at, noise);
            break;
        }
        }
    }
    return bytes;
}

TEST(ImageFuzz, MutatedImagesDecodeOrFailWithANamedError) {
    REQUIRE_CONVERT();
    TempDir dir;
    const Image16 rgb = testPicture(24, 17, 3, 80), rgba = testPicture(24, 17, 4, 81);
    std::vector<std::string> bases = {
        makeImage(dir.path(), "b.jpg", rgb, 8, {"-quality", "80"}),
        makeImage(dir.path(), "p.jpg", rgb, 8, {"-quality", "80", "-interlace", "JPEG"}),
        makeImage(dir.path(), "g.jpg", testPicture(24, 17, 1, 82), 8, {}),
        makeImage(dir.path(), "c.jpg", rgb, 8, {"-colorspace", "CMYK"}),
        makeImage(dir.path(), "a.png", rgba, 8, {"-interlace", "PNG", "PNG32:"}),
        makeImage(dir.path(), "s.png", rgba, 16, {"PNG64:"}),
        makeImage(dir.path(), "q.png", testPicture(24, 17, 4, 83, 4), 8, {"PNG8:"}),
        makeImage(dir.path(), "y.png", testPicture(24, 17, 1, 84), 8, {"-define", "png:bit-depth=4", "-define", "png:color-type=0"}),
        makeImage(dir.path(), "l.webp", rgba, 8, {"-quality", "70"}),
        makeImage(dir.path(), "x.webp", rgba, 8, {"-define", "webp:lossless=true"}),
    };
    std::vector<std::string> files;
    for (const std::string& b : bases) files.push_back(readFile(b));
    {
        std::vector<std::string> frames = {"-delay", "5"};
        for (int f = 0; f < 2; ++f) {
            frames.push_back(dir.path() + "/f" + std::to_string(f) + ".pam");
            writePam(frames.back(), testPicture(12, 9, 4, 85 + f), 8);
        }
        frames.push_back(dir.path() + "/anim.webp");
        ASSERT_TRUE(convert(frames));
        files.push_back(readFile(dir.path() + "/anim.webp"));
        bases.push_back(dir.path() + "/anim.webp");
    }

    std::mt19937 rng(20240611);
    int decoded = 0, refused = 0;
    double slowest = 0;
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kIterations; ++i) {
        const size_t which = rng() % files.size();
        std::string bytes = mutate(files[which], rng);
        if (bases[which].find(".png") != std::string::npos && rng() % 2) fixPngCrcs(bytes);
        const std::string name = "mutant-" + std::to_string(i) + "-" + bases[which].substr(bases[which].rfind('/') + 1);
        DecodeOptions options;
        options.alpha = i % 2 ? AlphaMode::OverWhite : AlphaMode::Drop;
        options.keep16 = i % 3 == 0;
        const auto t0 = std::chrono::steady_clock::now();
        const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
        try {
            readImageInfo(data, bytes.size(), name, options);
        } catch (const ImageError& e) {
            ASSERT_EQ(e.file(), name);
            ASSERT_EQ(std::string(e.what()).rfind(name + ": ", 0), 0u) << e.what();
        }
        try {
            const DecodedImage d = decodeImage(data, bytes.size(), name, options);
            ASSERT_EQ(d.rgb.samples.size(), static_cast<size_t>(d.rgb.width) * d.rgb.height * 3) << name;
            ASSERT_GT(d.rgb.width, 0);
            ++decoded;
        } catch (const ImageError& e) {
            ASSERT_EQ(e.file(), name);
            ASSERT_FALSE(e.reason().empty());
            ++refused;
        }
        slowest = std::max(slowest, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("%d mutants: %d decoded, %d refused; %.2f s in all, the slowest %.1f ms\n", kIterations, decoded,
                refused, total, slowest * 1000);
    EXPECT_GT(decoded, kIterations / 20) << "mutations too harsh to reach the decoders' insides";
    EXPECT_GT(refused, kIterations / 4);
    EXPECT_LT(slowest, 2.0) << "no mutant takes seconds";
}

} // namespace
