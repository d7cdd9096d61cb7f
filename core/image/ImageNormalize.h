#pragma once

#include "core/image/Image.h"

#include <vector>

namespace parallax {

// OpenAI CLIP's per-channel mean and standard deviation (RGB), which CLIP's and Qwen2-VL's and
// Qwen2.5-VL's image processors normalize with.
extern const std::vector<double> kClipMean;
extern const std::vector<double> kClipStd;
constexpr double kRescale255 = 1.0 / 255.0;

// The image as floats, channels first (all of channel 0's rows, then channel 1's, ...), each sample
// (v * rescale - mean[c]) / std[c] with the arithmetic of Hugging Face's image processors: v *
// rescale in double, rounded to float, then the subtraction and division in float (float32 mean
// and std). `mean` and `std` hold one value per channel. Throws std::invalid_argument when their
// sizes do not match the image's channels or a std is 0.
std::vector<float> normalizeImage(const Image& image, const std::vector<double>& mean, const std::vector<double>& std,
                                  double rescale = kRescale255);
// The same into `out`, which holds width * height * channels floats (a tensor's storage, say).
void normalizeImageInto(const Image& image, const std::vector<double>& mean, const std::vector<double>& std, float* out,
                        double rescale = kRescale255);

} // namespace parallax
