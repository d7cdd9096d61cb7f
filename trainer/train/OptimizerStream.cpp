#include "trainer/train/OptimizerStream.h"

namespace parallax {

// Without CUDA there is no other stream: the optimizer runs in order with everything else.
std::unique_ptr<OptimizerStream> OptimizerStream::forDevice(const torch::Device&) {
    return nullptr;
}

} // namespace parallax
