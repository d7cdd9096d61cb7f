#include "trainer/sampling/SampleImage.h"

#include "core/image/PngEncoder.h"

#include <cstring>
#include <sstream>
#include <stdexcept>

namespace parallax {

Image sampleToRgb(const torch::Tensor& image) {
    const torch::Tensor x = image.dim() == 4 && image.size(0) == 1 ? image.squeeze(0) : image;
    if (x.dim() != 3 || x.size(0) != 3 || x.size(1) < 1 || x.size(2) < 1 || !x.is_floating_point()) {
        std::ostringstream shape;
        shape << image.sizes();
        throw std::invalid_argument("a sample image must be one float RGB image (1, 3, H, W), not " + shape.str());
    }
    torch::NoGradGuard noGrad;
    const torch::Tensor rgb = ((x.detach().to(torch::kCPU, torch::kFloat32) / 2 + 0.5).clamp(0, 1) * 255)
                                  .round()
                                  .to(torch::kUInt8)
                                  .permute({1, 2, 0})
                                  .contiguous(); // (H, W, 3)
    Image out;
    out.height = static_cast<int>(rgb.size(0));
    out.width = static_cast<int>(rgb.size(1));
    out.channels = 3;
    out.samples.resize(static_cast<size_t>(rgb.numel()));
    std::memcpy(out.samples.data(), rgb.data_ptr<uint8_t>(), out.samples.size());
    return out;
}

void writeSamplePng(const torch::Tensor& image, const std::string& path) { writePngFile(sampleToRgb(image), path); }

} // namespace parallax
