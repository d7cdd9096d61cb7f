#include "trainer/parallel/FrozenWeights.h"

#include "trainer/models/Linear.h"

namespace parallax {

namespace {

bool frozenOrAbsent(const torch::Tensor& p) { return !p.defined() || !p.requires_grad(); }

void hold(torch::Tensor& p, torch::Device device, torch::ScalarType type) {
    if (p.defined()) p.set_data(p.to(device, type));
}

} // namespace

int64_t moveToDevice(torch::nn::Module& model, torch::Device device, std::optional<torch::ScalarType> productType) {
    torch::NoGradGuard noGrad;
    int64_t held = 0;
    if (productType) {
        for (const auto& module : model.modules(/*include_self=*/true)) {
            auto* linear = dynamic_cast<Linear*>(module.get());
            if (!linear || !linear->weight.defined() || !frozenOrAbsent(linear->weight) || !frozenOrAbsent(linear->bias))
                continue;
            // One at a time, so that the full-precision values never exist on the device.
            hold(linear->weight, device, *productType);
            hold(linear->bias, device, *productType);
            held += linear->weight.numel() + (linear->bias.defined() ? linear->bias.numel() : 0);
        }
    }
    model.to(device); // the rest, each in its own type
    return held;
}

} // namespace parallax
