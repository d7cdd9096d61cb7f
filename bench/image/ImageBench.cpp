// Images per second through the image pipeline on one core: a 1024 x 768 JPEG (made here with
// libjpeg, quality 90, 4:2:0, a picture of gradients, edges and noise) decoded, resized to 448 x 336
// with the bicubic resize, and normalized, as a Qwen2-VL or CLIP preprocessing step would.
//
//   bench_image [--seconds S] [--write-jpeg PATH] [--tokenizer JSON] [FILE ...]
//
// Each row runs for S seconds (default 2) after one warm-up call and reports images per second by
// wall clock and per CPU second, and CPU milliseconds per image (medians of 5 runs of S / 5 seconds
// each). The process is pinned to one core. FILE arguments add a
// decode + resize row each (to 448 x 336) for files of one's own; --write-jpeg saves the generated
// JPEG, so that another decoder can be timed on the same bytes.
//
// Then Qwen2.5-VL's input pipeline on the same JPEG: the image processor (smart resize to multiples
// of 28 within data.max_pixels, bicubic, CLIP normalization, 14 x 14 patches with temporal 2) at the
// spec's default max_pixels and at 1280 x 28 x 28, and, where the conversation reader is built and
// Qwen's tokenizer.json is found (--tokenizer, default npm-oracle/qwen/tokenizer.json under the
// build folder), a whole conversations sample as the worker's dataset makes it: the chat template,
// tokenizing a question and a 120-word answer, decoding the image and the processor.
#include "core/image/BicubicResize.h"
#include "core/image/ImageDecoder.h"
#include "core/image/ImageNormalize.h"
#include "core/image/QwenImageRows.h"
#if PARALLAX_BENCH_CONVERSATIONS
#include "core/conversations/ConversationEncoder.h"
#include "core/conversations/ConversationFile.h"
#include "core/text/Tokenizer.h"
#endif

#include <jpeglib.h>
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace parallax;
using Clock = std::chrono::steady_clock;

std::vector<uint8_t> makeJpeg(int width, int height) {
    std::mt19937 rng(7);
    std::normal_distribution<double> noise(0, 6);
    std::vector<uint8_t> rgb(static_cast<size_t>(width) * height * 3);
    for (int y = 0; y < height; ++y)
        for (int x = 0; x < width; ++x) {
            uint8_t* p = rgb.data() + (static_cast<size_t>(y) * width + x) * 3;
            const double base[3] = {255.0 * x / width, 255.0 * y / height, 128 + 100 * std::sin(0.02 * (x + y))};
            const bool edge = ((x / 64) + (y / 48)) % 7 == 0;
            for (int c = 0; c < 3; ++c)
                p[c] = static_cast<uint8_t>(std::clamp(edge ? 255 - base[c] : base[c] + noise(rng), 0.0, 255.0));
        }
    jpeg_compress_struct c{};
    jpeg_error_mgr err{};
    c.err = jpeg_std_error(&err);
    jpeg_create_compress(&c);
    unsigned char* out = nullptr;
    unsigned long size = 0;
    jpeg_mem_dest(&c, &out, &size);
    c.image_width = static_cast<JDIMENSION>(width);
    c.image_height = static_cast<JDIMENSION>(height);
    c.input_components = 3;
    c.in_color_space = JCS_RGB;
    jpeg_set_defaults(&c);
    jpeg_set_quality(&c, 90, TRUE);
    jpeg_start_compress(&c, TRUE);
    while (c.next_scanline < c.image_height) {
        JSAMPROW row = rgb.data() + static_cast<size_t>(c.next_scanline) * width * 3;
        jpeg_write_scanlines(&c, &row, 1);
    }
    jpeg_finish_compress(&c);
    std::vector<uint8_t> bytes(out, out + size);
    jpeg_destroy_compress(&c);
    std::free(out);
    return bytes;
}

double threadCpuSeconds() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// Calls per second of `fn` by wall clock and per CPU second of this thread (what the code costs on
// a machine shared with other work): the medians of 5 runs of `seconds` / 5 each, after one
// warm-up call.
struct Rate {
    double wall = 0;
    double cpu = 0;
};

Rate perSecond(const std::function<void()>& fn, double seconds) {
    fn();
    std::vector<double> wall, cpu;
    for (int run = 0; run < 5; ++run) {
        const auto start = Clock::now();
        const double cpu0 = threadCpuSeconds();
        int calls = 0;
        double elapsed = 0;
        do {
            fn();
            ++calls;
            elapsed = std::chrono::duration<double>(Clock::now() - start).count();
        } while (elapsed < seconds / 5);
        wall.push_back(calls / elapsed);
        cpu.push_back(calls / std::max(threadCpuSeconds() - cpu0, 1e-9));
    }
    std::sort(wall.begin(), wall.end());
    std::sort(cpu.begin(), cpu.end());
    return {wall[2], cpu[2]};
}

void row(const char* what, Rate rate) {
    std::printf("| %-52s | %8.1f | %8.1f | %7.2f |\n", what, rate.wall, rate.cpu, 1000.0 / rate.cpu);
}

bool pinToOneCore() {
    cpu_set_t allowed;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return false;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
        if (CPU_ISSET(cpu, &allowed)) {
            cpu_set_t one;
            CPU_ZERO(&one);
            CPU_SET(cpu, &one);
            return sched_setaffinity(0, sizeof one, &one) == 0;
        }
    return false;
}

// The Qwen2.5-VL image processor's rule for images of at most `maxPixels`.
QwenImageRule qwenRule(int64_t maxPixels) {
    QwenImageRule rule;
    rule.resize.factor = 28;
    rule.resize.minPixels = 32 * 32;
    rule.resize.maxPixels = maxPixels;
    return rule;
}

void qwenRows(const std::vector<uint8_t>& jpeg, const DecodedImage& decoded, double seconds) {
    for (const int64_t maxPixels : {int64_t{768} * 768, int64_t{1280} * 28 * 28}) {
        const QwenImageRule rule = qwenRule(maxPixels);
        const QwenImageRows rows = qwenImageRows(decoded.rgb, rule);
        const std::string what = "Qwen2.5-VL processor, max_pixels " + std::to_string(maxPixels) + " (" +
                                 std::to_string(rows.columns * 14) + "x" + std::to_string(rows.rows * 14) + ")";
        row(what.c_str(), perSecond([&] { qwenImageRows(decoded.rgb, rule); }, seconds));
        row("  decode + that", perSecond([&] {
                const DecodedImage d = decodeImage(jpeg.data(), jpeg.size(), "bench.jpg");
                qwenImageRows(d.rgb, rule);
            }, seconds));
    }
}

#if PARALLAX_BENCH_CONVERSATIONS
// One conversations sample with the JPEG, encoded as the worker's dataset encodes it.
void conversationRow(const std::vector<uint8_t>& jpeg, const std::string& tokenizerPath, double seconds) {
    if (!std::ifstream(tokenizerPath)) {
        std::printf("\n(no conversation row: %s not found; pass --tokenizer)\n", tokenizerPath.c_str());
        return;
    }
    const std::filesystem::path dir = std::filesystem::temp_directory_path() / "parallax-bench-image";
    std::filesystem::create_directories(dir);
    std::ofstream((dir / "photo.jpg").string(), std::ios::binary)
        .write(reinterpret_cast<const char*>(jpeg.data()), static_cast<std::streamsize>(jpeg.size()));
    std::string answer;
    for (int i = 0; i < 12; ++i) answer += "The picture shows smooth gradients crossed by sharp bright edges and a little noise. ";
    std::ofstream((dir / "chat.jsonl").string())
        << R"({"messages": [{"role": "user", "content": "<image>Describe this picture in detail."}, {"role": "assistant", "content": ")"
        << answer << R"("}], "images": ["photo.jpg"]})" << "\n";
    const Tokenizer tokenizer = Tokenizer::load(tokenizerPath);
    const std::vector<Conversation> samples = readConversations((dir / "chat.jsonl").string());
    ConversationLimits limits;
    limits.seqLen = 4096;
    limits.image = qwenRule(int64_t{1280} * 28 * 28);
    const ConversationEncoder encoder(tokenizer, limits);
    const EncodedConversation e = encoder.encode(samples.front());
    const std::string what = "conversation sample (" + std::to_string(e.ids.size()) + " tokens, 1 image)";
    row(what.c_str(), perSecond([&] { encoder.encode(samples.front()); }, seconds));
    std::filesystem::remove_all(dir);
}
#endif

} // namespace

int main(int argc, char** argv) {
    double seconds = 2.0;
    std::string writeTo, tokenizer = "npm-oracle/qwen/tokenizer.json";
    std::vector<std::string> files;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--seconds" && i + 1 < argc) seconds = std::atof(argv[++i]);
        else if (a == "--write-jpeg" && i + 1 < argc) writeTo = argv[++i];
        else if (a == "--tokenizer" && i + 1 < argc) tokenizer = argv[++i];
        else if (a.rfind("--", 0) == 0) {
            std::fprintf(stderr, "usage: bench_image [--seconds S] [--write-jpeg PATH] [--tokenizer JSON] [FILE ...]\n");
            return 2;
        } else files.push_back(a);
    }
    const bool pinned = pinToOneCore();
    const std::vector<uint8_t> jpeg = makeJpeg(1024, 768);
    if (!writeTo.empty()) std::ofstream(writeTo, std::ios::binary).write(reinterpret_cast<const char*>(jpeg.data()),
                                                                          static_cast<std::streamsize>(jpeg.size()));
    std::printf("Image pipeline, %s: 1024 x 768 JPEG of %zu bytes (quality 90, 4:2:0) -> 448 x 336\n\n",
                pinned ? "one core" : "one thread (could not pin to a core)", jpeg.size());
    std::printf("| %-52s | %8s | %8s | %7s |\n|---|---:|---:|---:|\n", "step", "images/s", "per CPU s",
                "CPU ms");

    const DecodedImage decoded = decodeImage(jpeg.data(), jpeg.size(), "bench.jpg");
    const Image resized = resizeBicubic(decoded.rgb, 448, 336);
    row("decode", perSecond([&] { decodeImage(jpeg.data(), jpeg.size(), "bench.jpg"); }, seconds));
    row("resize 1024x768 -> 448x336 (bicubic, antialiased)", perSecond([&] { resizeBicubic(decoded.rgb, 448, 336); }, seconds));
    row("normalize 448x336 (CLIP mean and std, float, CHW)",
        perSecond([&] { normalizeImage(resized, kClipMean, kClipStd); }, seconds));
    row("decode + resize", perSecond([&] {
            const DecodedImage d = decodeImage(jpeg.data(), jpeg.size(), "bench.jpg");
            resizeBicubic(d.rgb, 448, 336);
        }, seconds));
    // Into one buffer kept across images, as the worker normalizes into a batch tensor.
    std::vector<float> batch(448 * 336 * 3);
    row("decode + resize + normalize (into a kept buffer)", perSecond([&] {
            const DecodedImage d = decodeImage(jpeg.data(), jpeg.size(), "bench.jpg");
            normalizeImageInto(resizeBicubic(d.rgb, 448, 336), kClipMean, kClipStd, batch.data());
        }, seconds));
    for (const std::string& file : files) {
        const std::vector<uint8_t> bytes = readImageBytes(file);
        const std::string what = "decode + resize " + file.substr(file.rfind('/') + 1);
        row(what.c_str(), perSecond([&] {
                const DecodedImage d = decodeImage(bytes.data(), bytes.size(), file);
                resizeBicubic(d.rgb, 448, 336);
            }, seconds));
    }
    qwenRows(jpeg, decoded, seconds);
#if PARALLAX_BENCH_CONVERSATIONS
    conversationRow(jpeg, tokenizer, seconds);
#else
    (void)tokenizer;
#endif
    return 0;
}
