#include "core/image/QwenImageRows.h"

#include "core/image/BicubicResize.h"
#include "core/image/ImageNormalize.h"

#include <stdexcept>

namespace parallax {

QwenImageRows qwenImageRows(const Image& rgb, const QwenImageRule& rule) {
    if (rgb.channels != 3) throw std::invalid_argument("qwenImageRows takes RGB images");
    const ImageSides sides = smartResize(rgb.height, rgb.width, rule.resize);
    const Image resized = (sides.width == rgb.width && sides.height == rgb.height)
                              ? rgb
                              : resizeBicubic(rgb, static_cast<int>(sides.width), static_cast<int>(sides.height));
    const std::vector<float> chw = normalizeImage(resized, kClipMean, kClipStd); // (3, H, W)
    const int64_t p = rule.patch, m = rule.merge, t = rule.temporal, h = sides.height, w = sides.width;
    QwenImageRows out;
    out.rows = h / p;
    out.columns = w / p;
    out.frames = 1; // one image fills one frame group (repeated `temporal` times)
    out.rowValues = 3 * t * p * p;
    out.values.resize(static_cast<size_t>(out.patchRows() * out.rowValues));
    float* row = out.values.data();
    for (int64_t R = 0; R < out.rows / m; ++R)
        for (int64_t C = 0; C < out.columns / m; ++C)
            for (int64_t r = 0; r < m; ++r)
                for (int64_t c = 0; c < m; ++c) {
                    const int64_t y0 = (R * m + r) * p, x0 = (C * m + c) * p;
                    for (int64_t ch = 0; ch < 3; ++ch)
                        for (int64_t f = 0; f < t; ++f) // every frame the same image
                            for (int64_t y = 0; y < p; ++y) {
                                const float* src = chw.data() + (ch * h + y0 + y) * w + x0;
                                for (int64_t x = 0; x < p; ++x) *row++ = src[x];
                            }
                }
    return out;
}

} // namespace parallax
