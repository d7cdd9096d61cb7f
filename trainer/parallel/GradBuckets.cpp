#include "trainer/parallel/GradBuckets.h"

#include <algorithm>

namespace parallax {

bool decays(const std::string& name, const torch::Tensor& param) {
    return param.dim() >= 2;
}

GradBuckets::GradBuckets(const std::vector<std::pair<std::string, torch::Tensor>>& namedParams, double bucketBytes) {
    const int64_t capacity = std::max<int64_t>(1, static_cast<int64_t>(bucketBytes / sizeof(float)));
    // Reverse registration order: the order in which backward produces gradients.
    std::vector<int> order;
    for (int i = static_cast<int>(namedParams.size()) - 1; i >= 0; --i)
        if (namedParams[static_cast<size_t>(i)].second.requires_grad()) order.push_back(i);

    struct Pending {
        std::vector<int> members; // indices into namedParams
        int64_t numel = 0;
    };
    // One open bucket per decay group, closed when full.
    Pending open[2];
    std::vector<std::pair<bool, Pending>> closed;
    for (int i : order) {
        const auto& [name, p] = namedParams[static_cast<size_t>(i)];
        const bool d = decays(name, p);
        Pending& cur = open[d ? 1 : 0];
        if (!cur.members.empty() && cur.numel + p.numel() > capacity) {
            closed.emplace_back(d, std::move(cur));
            cur = Pending{};
        }
        cur.members.push_back(i);
        cur.numel += p.numel();
    }
    for (int d = 1; d >= 0; --d)
        if (!open[d].members.empty()) closed.emplace_back(d == 1, std::move(open[d]));

    for (auto& [decay, pending] : closed) {
        Bucket b;
        b.decay = decay;
        const auto& first = namedParams[static_cast<size_t>(pending.members.front())].second;
        auto opts = torch::TensorOptions().dtype(torch::kFloat).device(first.device());
        b.params = torch::empty({pending.numel}, opts);
        b.grads = torch::zeros({pending.numel}, opts);
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

double GradBuckets::localGradNormSquared() const {
    double total = 0;
    for (const Bucket& b : m_buckets) total += b.grads.pow(2).sum(torch::kDouble).item<double>();
    return total;
}

} // namespace parallax
