#include "trainer/cache/BucketImage.h"

#include "core/image/ImageDecoder.h"

namespace parallax {

torch::Tensor bucketImageTensor(const std::string& path, int64_t maxPixels, BucketSize& bucket) {
    const DecodedImage decoded = decodeImageFile(path);
    bucket = bucketFor(decoded.rgb.width, decoded.rgb.height, maxPixels);
    return bucketImageTensor(decoded.rgb, bucket);
}

torch::Tensor bucketImageTensor(const Image& rgb, BucketSize bucket) {
    Image fitted = fitToBucket(rgb, bucket);
    const torch::Tensor hwc = torch::from_blob(fitted.samples.data(), {fitted.height, fitted.width, 3}, torch::kUInt8);
    // The conversion makes a tensor of its own: `fitted` may go.
    return hwc.permute({2, 0, 1}).unsqueeze(0).to(torch::kFloat32).div(127.5).sub(1.0);
}

} // namespace parallax
