#include "core/image/PixelConversion.h"

namespace parallax {

int layoutChannels(SampleLayout layout) {
    switch (layout) {
    case SampleLayout::Gray: return 1;
    case SampleLayout::GrayAlpha: return 2;
    case SampleLayout::Rgb: return 3;
    case SampleLayout::Rgba: return 4;
    case SampleLayout::InvertedCmyk: return 4;
    }
    return 0;
}

namespace {

// round((c * a + top * (top - a)) / top): c over white with alpha a, on the scale 0..top (odd, so
// no value lies half-way).
inline uint32_t overWhite(uint32_t c, uint32_t a, uint32_t top) {
    const uint64_t v = uint64_t(c) * a + uint64_t(top) * (top - a);
    return static_cast<uint32_t>((v + top / 2) / top);
}

// Each pixel's stored samples `in`, shifted right by `shift` onto the output scale 0..top.
template <class In, class Out>
void convertPixels(const In* in, int shift, SampleLayout layout, AlphaMode mode, uint32_t top, Pixels<Out>& out) {
    const int ch = layoutChannels(layout);
    const size_t count = static_cast<size_t>(out.width) * static_cast<size_t>(out.height);
    const bool composite = mode == AlphaMode::OverWhite;
    uint32_t p[4] = {};
    for (size_t i = 0; i < count; ++i) {
        const In* s = in + i * static_cast<size_t>(ch);
        for (int k = 0; k < ch; ++k) p[k] = static_cast<uint32_t>(s[k]) >> shift;
        uint32_t r, g, b;
        switch (layout) {
        case SampleLayout::Gray: r = g = b = p[0]; break;
        case SampleLayout::GrayAlpha: r = g = b = composite ? overWhite(p[0], p[1], top) : p[0]; break;
        case SampleLayout::Rgb: r = p[0]; g = p[1]; b = p[2]; break;
        case SampleLayout::Rgba:
            r = composite ? overWhite(p[0], p[3], top) : p[0];
            g = composite ? overWhite(p[1], p[3], top) : p[1];
            b = composite ? overWhite(p[2], p[3], top) : p[2];
            break;
        case SampleLayout::InvertedCmyk: {
            const uint32_t k = p[3];
            r = k - ((top - p[0]) * k + top / 2) / top;
            g = k - ((top - p[1]) * k + top / 2) / top;
            b = k - ((top - p[2]) * k + top / 2) / top;
            break;
        }
        default: r = g = b = 0;
        }
        Out* o = out.samples.data() + i * 3;
        o[0] = static_cast<Out>(r);
        o[1] = static_cast<Out>(g);
        o[2] = static_cast<Out>(b);
    }
}

template <class Out>
Pixels<Out> rgbOf(const RawImage& raw) {
    Pixels<Out> out;
    out.width = raw.width;
    out.height = raw.height;
    out.channels = 3;
    out.samples.resize(static_cast<size_t>(raw.width) * static_cast<size_t>(raw.height) * 3);
    return out;
}

} // namespace

Image toRgb8(const RawImage& raw, AlphaMode alpha) {
    Image out = rgbOf<uint8_t>(raw);
    if (raw.bits == 16) convertPixels(raw.samples16.data(), 8, raw.layout, alpha, 255, out);
    else convertPixels(raw.samples8.data(), 0, raw.layout, alpha, 255, out);
    return out;
}

Image16 toRgb16(const RawImage& raw, AlphaMode alpha) {
    Image16 out = rgbOf<uint16_t>(raw);
    convertPixels(raw.samples16.data(), 0, raw.layout, alpha, 65535, out);
    return out;
}

} // namespace parallax
