#include "core/captions/AspectBucket.h"

#include "core/image/BicubicResize.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

namespace parallax {

BucketSize bucketFor(int width, int height, int64_t maxPixels) {
    if (width < 1 || height < 1)
        throw std::invalid_argument("an image of " + std::to_string(width) + " x " + std::to_string(height) +
                                    " pixels has no bucket");
    if (maxPixels < int64_t(kBucketSide) * kBucketSide)
        throw std::invalid_argument("data.max_pixels = " + std::to_string(maxPixels) + " is below one 16 x 16 bucket");
    double w = width, h = height;
    const double area = w * h;
    if (area > static_cast<double>(maxPixels)) {
        const double scale = std::sqrt(static_cast<double>(maxPixels) / area);
        w *= scale;
        h *= scale;
    }
    const auto side = [](double v) {
        return std::max(kBucketSide, static_cast<int>(std::floor(v + 1e-9)) / kBucketSide * kBucketSide);
    };
    return {side(w), side(h)};
}

Image fitToBucket(const Image& image, BucketSize size) {
    if (image.width < 1 || image.height < 1) throw std::invalid_argument("an empty image has no bucket");
    const double scale = std::max(static_cast<double>(size.width) / image.width,
                                  static_cast<double>(size.height) / image.height);
    const int w = std::max(size.width, static_cast<int>(std::lround(image.width * scale)));
    const int h = std::max(size.height, static_cast<int>(std::lround(image.height * scale)));
    const Image resized = w == image.width && h == image.height ? image : resizeBicubic(image, w, h);
    const int left = (w - size.width) / 2, top = (h - size.height) / 2;
    Image out;
    out.width = size.width;
    out.height = size.height;
    out.channels = resized.channels;
    out.samples.resize(out.rowSamples() * static_cast<size_t>(out.height));
    for (int y = 0; y < out.height; ++y)
        std::memcpy(out.row(y), resized.row(top + y) + static_cast<size_t>(left) * static_cast<size_t>(resized.channels),
                    out.rowSamples());
    return out;
}

std::map<BucketSize, int64_t> bucketCounts(const std::vector<BucketSize>& sizes) {
    std::map<BucketSize, int64_t> counts;
    for (const BucketSize& s : sizes) ++counts[s];
    return counts;
}

} // namespace parallax
