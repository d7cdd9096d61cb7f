#include "core/image/ImageNormalize.h"

#include <stdexcept>
#include <string>

namespace parallax {

const std::vector<double> kClipMean = {0.48145466, 0.4578275, 0.40821073};
const std::vector<double> kClipStd = {0.26862954, 0.26130258, 0.27577711};

void normalizeImageInto(const Image& image, const std::vector<double>& mean, const std::vector<double>& std, float* out,
                        double rescale) {
    const size_t channels = static_cast<size_t>(image.channels);
    if (mean.size() != channels || std.size() != channels)
        throw std::invalid_argument("normalizeImage: " + std::to_string(mean.size()) + " means and " +
                                    std::to_string(std.size()) + " standard deviations for " +
                                    std::to_string(channels) + " channels");
    const size_t plane = static_cast<size_t>(image.width) * static_cast<size_t>(image.height);
    // Every sample value has one result per channel: a table of 256 each.
    std::vector<float> table(channels * 256);
    for (size_t c = 0; c < channels; ++c) {
        const float m = static_cast<float>(mean[c]);
        const float s = static_cast<float>(std[c]);
        if (s == 0.0f) throw std::invalid_argument("normalizeImage: standard deviation 0 for channel " + std::to_string(c));
        for (int v = 0; v < 256; ++v) {
            const float scaled = static_cast<float>(static_cast<double>(v) * rescale);
            table[c * 256 + static_cast<size_t>(v)] = (scaled - m) / s;
        }
    }
    for (size_t c = 0; c < channels; ++c) {
        const float* t = table.data() + c * 256;
        float* dst = out + c * plane;
        for (size_t i = 0; i < plane; ++i) dst[i] = t[image.samples[i * channels + c]];
    }
}

std::vector<float> normalizeImage(const Image& image, const std::vector<double>& mean, const std::vector<double>& std,
                                  double rescale) {
    std::vector<float> out(static_cast<size_t>(image.width) * static_cast<size_t>(image.height) *
                           static_cast<size_t>(image.channels));
    normalizeImageInto(image, mean, std, out.data(), rescale);
    return out;
}

} // namespace parallax
