#pragma once

#include "trainer/models/Linear.h"
#include "trainer/parallel/GradBuckets.h"

#include <torch/torch.h>

#include <map>
#include <string>
#include <vector>

namespace parallax {

// Copies of the Linear layers' weights and biases in the dtype their products run in, kept beside
// the fp32 buckets that hold the parameters whole (no ZeRO, ZeRO-1 and 2). Under bf16 autocast each
// product reads a bf16 copy of its weight and of its bias, which autocast makes with one cast per
// tensor per step: two kernel launches per layer, hundreds per step, each costing the host more
// than the GPU. Here one cast per bucket, after each update (refresh), makes them all, and every
// layer's `product_weight` and `product_bias` view them. The values are autocast's: the same
// rounding of the same fp32 values; gradients still go to the fp32 parameters.
class ProductCopies {
public:
    // `layers`: module name ("units.3.q") -> its Linear; those whose weight or bias a bucket holds
    // get views of the buckets' copies; a frozen layer (its parameters in no bucket, never updated,
    // as a frozen vision tower's) gets copies of its own, made here.
    ProductCopies(GradBuckets& buckets, torch::ScalarType type, const std::map<std::string, Linear*>& layers);
    ProductCopies(const ProductCopies&) = delete;
    ProductCopies& operator=(const ProductCopies&) = delete;
    // Unsets the layers' copies.
    ~ProductCopies();

    // After the buckets' parameters changed (an update, a checkpoint loaded).
    void refresh();
    // After the frozen layers' parameters were written (a checkpoint loaded).
    void refreshFrozen();
    // Layers whose products read a copy here.
    size_t layersSet() const { return m_layers.size(); }

private:
    GradBuckets& m_buckets;
    std::vector<torch::Tensor> m_copies; // per bucket; undefined where it holds no layer's parameter
    std::vector<Linear*> m_layers;
    std::vector<Linear*> m_frozen; // layers with copies of their own
};

// The Linear layers of a model by module name, for ProductCopies and Zero3's product copies.
std::map<std::string, Linear*> linearLayers(torch::nn::Module& model);

} // namespace parallax
