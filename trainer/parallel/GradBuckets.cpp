#include "trainer/parallel/GradBuckets.h"

#include "trainer/parallel/GradientReducer.h"

#include <algorithm>
#include <cstdlib>

namespace parallax {

bool decays(const std::string& name, const torch::Tensor& param) {
    return param.dim() >= 2;
}

int unitOfParameter(const std::string& name) {
    const std::string prefix = "units.";
    if (name.compare(0, prefix.size(), prefix) != 0) return -1;
    return std::atoi(name.c_str() + prefix.size());
}

GradBuckets::GradBuckets(const std::vector<std::pair<std::string, torch::Tensor>>& namedParams,
                         const BucketOptions& options) {
    const int64_t capacity = std::max<int64_t>(1, static_cast<int64_t>(options.bucketBytes / sizeof(float)));
    const std::set<std::string>& sharded = options.sharded;
    // Reverse registration order: the order in which backward produces gradients.
    std::vector<int> order;
    for (int i = static_cast<int>(namedParams.size()) - 1; i >= 0; --i)
        if (namedParams[static_cast<size_t>(i)].second.requires_grad()) order.push_back(i);

    struct Pending {
        std::vector<int> members; // indices into namedParams
        int64_t numel = 0;
    };
    // One open bucket per group (decay x sharded), closed when full or, per unit, at a unit change.
    Pending open[4];
    int openUnit = -2;
    std::vector<std::pair<int, Pending>> closed;
    auto closeAll = [&] {
        for (int group = 3; group >= 0; --group) {
            if (!open[group].members.empty()) closed.emplace_back(group, std::move(open[group]));
            open[group] = Pending{};
        }
    };
    for (int i : order) {
        const auto& [name, p] = namedParams[static_cast<size_t>(i)];
        if (options.perUnit && unitOfParameter(name) != openUnit) {
            closeAll();
            openUnit = unitOfParameter(name);
        }
        const bool decay = decays(name, p) && !options.withoutGradient.count(name);
        const int group = (decay ? 1 : 0) + (sharded.count(name) ? 2 : 0);
        Pending& cur = open[group];
        if (options.alone.count(name)) { // after the open bucket of its group, as arrival order has it
            if (!cur.members.empty()) closed.emplace_back(group, std::move(cur));
            cur = Pending{};
            closed.emplace_back(group, Pending{{i}, p.numel()});
            continue;
        }
        if (!options.perUnit && !cur.members.empty() && cur.numel + p.numel() > capacity) {
            closed.emplace_back(group, std::move(cur));
            cur = Pending{};
        }
        cur.members.push_back(i);
        cur.numel += p.numel();
    }
    closeAll();

    for (auto& [group, pending] : closed) {
        const bool decay = (group & 1) != 0;
        Bucket b;
        b.decay = decay;
        b.sharded = (group & 2) != 0;
        const auto& [firstName, first] = namedParams[static_cast<size_t>(pending.members.front())];
        b.unit = unitOfParameter(firstName);
        b.used = pending.numel;
        const int64_t pad = std::max<int64_t>(1, options.padMultiple);
        const int64_t padded = (pending.numel + pad - 1) / pad * pad;
        auto opts = torch::TensorOptions().dtype(torch::kFloat).device(first.device());
        b.params = torch::zeros({padded}, opts);
        b.grads = torch::zeros({padded}, opts);
        const int bucketIndex = static_cast<int>(m_buckets.size());
        int64_t offset = 0;
        for (int i : pending.members) {
            const auto& [name, p] = namedParams[static_cast<size_t>(i)];
            ParamSlot s;
            s.name = name;
            s.bucket = bucketIndex;
            s.offset = offset;
            s.numel = p.numel();
            s.shape = p.sizes().vec();
            s.decay = decay;
            s.sharded = b.sharded;
            torch::NoGradGuard noGrad;
            auto view = b.params.narrow(0, offset, s.numel).view(p.sizes());
            view.copy_(p);
            // The module keeps its tensor object; only its storage moves into the bucket.
            s.param = p;
            s.param.set_data(view);
            s.param.mutable_grad() = b.grads.narrow(0, offset, s.numel).view(p.sizes());
            b.slots.push_back(static_cast<int>(m_slots.size()));
            m_slots.push_back(std::move(s));
            offset += p.numel();
        }
        m_buckets.push_back(std::move(b));
    }
}

int64_t GradBuckets::numel() const {
    int64_t n = 0;
    for (const Bucket& b : m_buckets) n += b.numel();
    return n;
}

void GradBuckets::zeroGrads() {
    for (Bucket& b : m_buckets) b.grads.zero_();
}

torch::Tensor sumOfSquares(const std::vector<torch::Tensor>& tensors) {
    if (tensors.empty()) return torch::Tensor();
    // One multi-tensor pass on CUDA over all the buckets (each read once, no squared copy; float32
    // accumulation), one norm per tensor elsewhere.
    return torch::stack(at::_foreach_norm(tensors, 2)).to(torch::kDouble).square().sum().reshape({1});
}

torch::Tensor reducedNormSquared(const GradientReducer& reducer, const GradBuckets& buckets, bool includeReplicated) {
    std::vector<torch::Tensor> held;
    for (size_t b = 0; b < buckets.buckets().size(); ++b) {
        const Bucket& bucket = buckets.buckets()[b];
        if ((bucket.sharded || includeReplicated) && !bucket.tiedCopy) held.push_back(reducer.reducedGrads(b));
    }
    return sumOfSquares(held);
}

} // namespace parallax
