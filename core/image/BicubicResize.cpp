#include "core/image/BicubicResize.h"

#include "core/image/ImageDecoder.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace parallax {

namespace {

// Weights carry 22 fraction bits: 8 bits of sample, 2 bits of headroom for the kernel's
// overshoot, in a 32-bit sum.
constexpr int kPrecisionBits = 32 - 8 - 2;

double cubic(double x) {
    constexpr double a = -0.5;
    x = std::fabs(x);
    if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
    if (x < 2.0) return (((x - 5.0) * x + 8.0) * x - 4.0) * a;
    return 0.0;
}

double sinc(double x) {
    if (x == 0.0) return 1.0;
    x *= M_PI;
    return std::sin(x) / x;
}

// The three-lobed Lanczos window, as PIL truncates it: [-3, 3).
double lanczos(double x) {
    return (-3.0 <= x && x < 3.0) ? sinc(x) * sinc(x / 3.0) : 0.0;
}

// A resampling filter: its kernel and its support in input pixels at scale 1.
struct Filter {
    double (*kernel)(double);
    double support;
};
constexpr Filter kBicubic{cubic, 2.0};
constexpr Filter kLanczos{lanczos, 3.0};

// For each output position along one axis: the first input position it reads, how many, and
// their fixed-point weights (`taps` apart in `weights`).
struct Kernel {
    int taps = 0;
    std::vector<int> first;
    std::vector<int> count;
    std::vector<int32_t> weights;
};

Kernel kernelFor(int inSize, int outSize, const Filter& filter) {
    const double scale = static_cast<double>(inSize) / outSize;
    const double filterScale = std::max(scale, 1.0);
    const double support = filter.support * filterScale;
    const double inverse = 1.0 / filterScale; // multiplied by, not divided by: the weights' last bits count
    Kernel k;
    k.taps = static_cast<int>(std::ceil(support)) * 2 + 1;
    k.first.resize(static_cast<size_t>(outSize));
    k.count.resize(static_cast<size_t>(outSize));
    k.weights.assign(static_cast<size_t>(outSize) * static_cast<size_t>(k.taps), 0);
    std::vector<double> w(static_cast<size_t>(k.taps));
    for (int o = 0; o < outSize; ++o) {
        const double center = (o + 0.5) * scale;
        // Truncation toward zero, then clamping, as the bounds are rounded there.
        const int lo = std::max(static_cast<int>(center - support + 0.5), 0);
        const int hi = std::min(static_cast<int>(center + support + 0.5), inSize);
        const int n = hi - lo;
        double sum = 0.0;
        for (int i = 0; i < n; ++i) {
            w[static_cast<size_t>(i)] = filter.kernel((i + lo - center + 0.5) * inverse);
            sum += w[static_cast<size_t>(i)];
        }
        int32_t* fixed = k.weights.data() + static_cast<size_t>(o) * static_cast<size_t>(k.taps);
        for (int i = 0; i < n; ++i) {
            const double v = (sum != 0.0 ? w[static_cast<size_t>(i)] / sum : w[static_cast<size_t>(i)]) *
                             static_cast<double>(1 << kPrecisionBits);
            fixed[i] = static_cast<int32_t>(v < 0 ? v - 0.5 : v + 0.5);
        }
        k.first[static_cast<size_t>(o)] = lo;
        k.count[static_cast<size_t>(o)] = n;
    }
    return k;
}

inline uint8_t clip8(int32_t sum) {
    const int32_t v = sum >> kPrecisionBits;
    return static_cast<uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v));
}

// Rows [rowBegin, rowBegin + out.height) of `in` resampled along x into `out`, kBlock rows at a
// time: the block is first laid out column by column (each sample's kBlock rows side by side), so
// that one weight multiplies kBlock rows in a loop the compiler vectorizes. The sums are integers:
// their order does not change them.
constexpr int kBlock = 16;

void horizontal(const Image& in, int rowBegin, const Kernel& k, Image& out) {
    const size_t inSamples = in.rowSamples();
    const int c = in.channels;
    std::vector<uint8_t> columns(inSamples * kBlock, 0);
    for (int y0 = 0; y0 < out.height; y0 += kBlock) {
        const int rows = std::min(kBlock, out.height - y0);
        for (int r = 0; r < rows; ++r) {
            const uint8_t* src = in.row(rowBegin + y0 + r);
            for (size_t s = 0; s < inSamples; ++s) columns[s * kBlock + static_cast<size_t>(r)] = src[s];
        }
        for (int x = 0; x < out.width; ++x) {
            const int32_t* w = k.weights.data() + static_cast<size_t>(x) * static_cast<size_t>(k.taps);
            const size_t first = static_cast<size_t>(k.first[static_cast<size_t>(x)]);
            const int n = k.count[static_cast<size_t>(x)];
            for (int ch = 0; ch < c; ++ch) {
                int32_t sum[kBlock];
                for (int r = 0; r < kBlock; ++r) sum[r] = 1 << (kPrecisionBits - 1);
                for (int i = 0; i < n; ++i) {
                    const uint8_t* col = columns.data() + ((first + static_cast<size_t>(i)) * c + ch) * kBlock;
                    const int32_t weight = w[i];
                    for (int r = 0; r < kBlock; ++r) sum[r] += col[r] * weight;
                }
                for (int r = 0; r < rows; ++r) out.row(y0 + r)[static_cast<size_t>(x) * c + ch] = clip8(sum[r]);
            }
        }
    }
}

// `in` resampled along y into `out`; the kernel's first rows count from `rowOffset` of `in`. Whole
// rows are weighed and summed at once (the inner loop runs along a row, which vectorizes).
void vertical(const Image& in, int rowOffset, const Kernel& k, Image& out) {
    const size_t samples = out.rowSamples();
    std::vector<int32_t> sum(samples);
    for (int y = 0; y < out.height; ++y) {
        const int32_t* w = k.weights.data() + static_cast<size_t>(y) * static_cast<size_t>(k.taps);
        const int first = k.first[static_cast<size_t>(y)] - rowOffset;
        std::fill(sum.begin(), sum.end(), 1 << (kPrecisionBits - 1));
        for (int i = 0, n = k.count[static_cast<size_t>(y)]; i < n; ++i) {
            const uint8_t* src = in.row(first + i);
            const int32_t weight = w[i];
            for (size_t x = 0; x < samples; ++x) sum[x] += src[x] * weight;
        }
        uint8_t* dst = out.row(y);
        for (size_t x = 0; x < samples; ++x) dst[x] = clip8(sum[x]);
    }
}

Image blank(int width, int height, int channels) {
    Image out;
    out.width = width;
    out.height = height;
    out.channels = channels;
    out.samples.resize(static_cast<size_t>(width) * static_cast<size_t>(height) * static_cast<size_t>(channels));
    return out;
}

Image resizeChannels(const Image& in, int width, int height, const Filter& filter) {
    const Kernel ky = kernelFor(in.height, height, filter);
    // The rows the vertical pass reads: only those are resampled along x.
    const int rowBegin = ky.first.front();
    const int rowEnd = ky.first.back() + ky.count.back();
    const Image* source = &in;
    Image across;
    int rowOffset = 0;
    if (width != in.width) {
        across = blank(width, rowEnd - rowBegin, in.channels);
        horizontal(in, rowBegin, kernelFor(in.width, width, filter), across);
        source = &across;
        rowOffset = rowBegin;
    }
    if (height == in.height) return source == &in ? in : across;
    Image out = blank(width, height, in.channels);
    vertical(*source, rowOffset, ky, out);
    return out;
}

Image resized(const Image& image, int width, int height, const Filter& filter, const char* name) {
    const std::string what = name;
    if (image.width < 1 || image.height < 1 || image.channels < 1 ||
        image.samples.size() != image.rowSamples() * static_cast<size_t>(image.height))
        throw std::invalid_argument(what + ": the image is empty or its samples do not match its sides");
    if (width < 1 || height < 1 || uint64_t(width) * uint64_t(height) > kMaxImagePixels)
        throw std::invalid_argument(what + ": cannot resize to " + std::to_string(width) + " x " + std::to_string(height));
    if (image.channels > 4)
        throw std::invalid_argument(what + ": " + std::to_string(image.channels) + " channels (1 to 4 are resized)");
    return resizeChannels(image, width, height, filter);
}

} // namespace

Image resizeBicubic(const Image& image, int width, int height) {
    return resized(image, width, height, kBicubic, "resizeBicubic");
}

Image resizeLanczos(const Image& image, int width, int height) {
    return resized(image, width, height, kLanczos, "resizeLanczos");
}

} // namespace parallax
