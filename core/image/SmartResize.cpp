#include "core/image/SmartResize.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace parallax {

namespace {

// Python's round() of a float to an integer: halves go to the even neighbour.
double roundHalfEven(double x) {
    const double down = std::floor(x);
    const double fraction = x - down;
    if (fraction < 0.5) return down;
    if (fraction > 0.5) return down + 1.0;
    return std::fmod(down, 2.0) == 0.0 ? down : down + 1.0;
}

} // namespace

ImageSides smartResize(int64_t height, int64_t width, const SmartResizeRule& rule) {
    if (height < 1 || width < 1 || rule.factor < 1)
        throw std::invalid_argument("smartResize: an image of " + std::to_string(height) + " x " +
                                    std::to_string(width) + " pixels with factor " + std::to_string(rule.factor));
    const double h = static_cast<double>(height), w = static_cast<double>(width), f = static_cast<double>(rule.factor);
    const double aspect = std::max(h, w) / std::min(h, w);
    if (aspect > 200.0)
        throw std::invalid_argument("the image's aspect ratio is " + std::to_string(aspect) + " (" +
                                    std::to_string(width) + " x " + std::to_string(height) +
                                    "); it must be at most 200");
    double hBar = roundHalfEven(h / f) * f;
    double wBar = roundHalfEven(w / f) * f;
    const double pixels = h * w; // exact: both sides are below 2^26 for any image decoded here
    if (hBar * wBar > static_cast<double>(rule.maxPixels)) {
        const double beta = std::sqrt(pixels / static_cast<double>(rule.maxPixels));
        hBar = std::max(f, std::floor(h / beta / f) * f);
        wBar = std::max(f, std::floor(w / beta / f) * f);
    } else if (hBar * wBar < static_cast<double>(rule.minPixels)) {
        const double beta = std::sqrt(static_cast<double>(rule.minPixels) / pixels);
        hBar = std::ceil(h * beta / f) * f;
        wBar = std::ceil(w * beta / f) * f;
    }
    return {static_cast<int64_t>(hBar), static_cast<int64_t>(wBar)};
}

} // namespace parallax
