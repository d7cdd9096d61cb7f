#include "trainer/parallel/ProductCopies.h"

#include <set>

namespace parallax {

ProductCopies::ProductCopies(GradBuckets& buckets, torch::ScalarType type, const std::map<std::string, Linear*>& layers)
    : m_buckets(buckets), m_copies(buckets.buckets().size()) {
    std::map<std::string, const ParamSlot*> slots;
    for (const ParamSlot& s : buckets.slots()) slots[s.name] = &s;
    auto slotOf = [&](const std::string& name, const torch::Tensor& param) -> const ParamSlot* {
        const auto it = slots.find(name);
        if (it == slots.end() || !param.defined()) return nullptr;
        if (it->second->param.unsafeGetTensorImpl() != param.unsafeGetTensorImpl())
            throw std::logic_error("product copies: " + name + " is not that layer's parameter");
        return it->second;
    };
    auto view = [&](const ParamSlot& s) {
        torch::Tensor& copy = m_copies[static_cast<size_t>(s.bucket)];
        if (!copy.defined()) {
            const Bucket& bucket = m_buckets.buckets()[static_cast<size_t>(s.bucket)];
            copy = torch::empty_like(bucket.params, bucket.params.options().dtype(type));
        }
        return copy.narrow(0, s.offset, s.numel).view(s.shape);
    };
    // A frozen parameter is in no bucket and never updated: a copy of its own, made once, unless it
    // is held in the products' type already (moveToDevice), when the products read it as it is.
    auto frozen = [type](const torch::Tensor& p) {
        return p.defined() && !p.requires_grad() && p.scalar_type() != type;
    };
    std::set<Linear*> set;
    for (const auto& [name, layer] : layers) {
        const ParamSlot* weight = slotOf(name + ".weight", layer->weight);
        const ParamSlot* bias = slotOf(name + ".bias", layer->bias);
        if (weight) layer->product_weight = view(*weight);
        if (bias) layer->product_bias = view(*bias);
        if (weight || bias) set.insert(layer);
        if (!weight && frozen(layer->weight) && (!layer->bias.defined() || frozen(layer->bias))) {
            layer->product_weight = torch::empty_like(layer->weight, layer->weight.options().dtype(type));
            if (layer->bias.defined())
                layer->product_bias = torch::empty_like(layer->bias, layer->bias.options().dtype(type));
            m_frozen.push_back(layer);
            set.insert(layer);
        }
    }
    m_layers.assign(set.begin(), set.end());
    refresh();
    refreshFrozen();
}

ProductCopies::~ProductCopies() {
    for (Linear* layer : m_layers) {
        layer->product_weight = torch::Tensor();
        layer->product_bias = torch::Tensor();
    }
}

void ProductCopies::refresh() {
    torch::NoGradGuard noGrad;
    for (size_t b = 0; b < m_copies.size(); ++b)
        if (m_copies[b].defined()) m_copies[b].copy_(m_buckets.buckets()[b].params);
}

void ProductCopies::refreshFrozen() {
    torch::NoGradGuard noGrad;
    for (Linear* layer : m_frozen) {
        layer->product_weight.copy_(layer->weight);
        if (layer->bias.defined()) layer->product_bias.copy_(layer->bias);
    }
}

std::map<std::string, Linear*> linearLayers(torch::nn::Module& model) {
    std::map<std::string, Linear*> layers;
    for (const auto& item : model.named_modules())
        if (auto* linear = dynamic_cast<Linear*>(item.value().get())) layers[item.key()] = linear;
    return layers;
}

} // namespace parallax
