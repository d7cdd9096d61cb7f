#pragma once

#include "core/image/PngEncoder.h"
#include "core/telemetry/Events.h"
#include "core/util/Base64.h"

#include <QColor>

#include <cstdint>
#include <string>

namespace parallax::test {

// A solid image of `color`, `width` x `height`.
inline Image solidImage(const QColor& color, int width, int height) {
    Image img;
    img.width = width;
    img.height = height;
    img.channels = 3;
    img.samples.reserve(size_t(width) * size_t(height) * 3);
    for (int i = 0; i < width * height; ++i) {
        img.samples.push_back(uint8_t(color.red()));
        img.samples.push_back(uint8_t(color.green()));
        img.samples.push_back(uint8_t(color.blue()));
    }
    return img;
}

// The row a run writes for image `index` drawn after `step` steps: a solid `color` PNG.
inline SampleEvent sampleRow(int64_t step, int64_t index, const QColor& color, int width = 32, int height = 24,
                             const std::string& prompt = "") {
    SampleEvent e;
    e.step = step;
    e.index = index;
    e.seed = 42 + index;
    e.width = width;
    e.height = height;
    e.steps = 20;
    e.prompt = prompt;
    e.png = base64Encode(encodePng(solidImage(color, width, height), "sample"));
    e.ms = 12;
    e.t = 1.7e9 + double(step);
    return e;
}

// A colour of its own for each (step, index).
inline QColor sampleColor(int64_t step, int64_t index) {
    return QColor::fromHsv(int((step * 37 + index * 101) % 360), 200, 220);
}

} // namespace parallax::test
