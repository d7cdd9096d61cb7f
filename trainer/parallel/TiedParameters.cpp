#include "trainer/parallel/TiedParameters.h"

#include <map>
#include <stdexcept>

namespace parallax {

std::set<std::string> TiedParameters::trained(const Model& model) {
    std::set<std::string> out;
    const auto params = model.named_parameters();
    for (const Model::Tie& t : model.ties()) {
        const bool source = params[t.source].requires_grad(), copy = params[t.copy].requires_grad();
        if (source != copy)
            throw std::invalid_argument((source ? t.source : t.copy) + " trains but " + (source ? t.copy : t.source) +
                                        ", which the model ties to it, does not: they are one weight; train both "
                                        "(finetune.modules_to_save names both) or neither");
        if (source) out.insert({t.source, t.copy});
    }
    return out;
}

TiedParameters::TiedParameters(const std::vector<Model::Tie>& ties, const std::set<std::string>& trained,
                               GradBuckets& buckets, const ProcessGroups& groups)
    : m_pp(groups.pp) {
    std::map<std::string, int> bucketOf;
    for (const ParamSlot& s : buckets.slots()) bucketOf[s.name] = s.bucket;
    auto find = [&bucketOf](const std::string& name) {
        const auto at = bucketOf.find(name);
        return at == bucketOf.end() ? -1 : at->second;
    };
    for (const Model::Tie& t : ties) {
        if (!trained.count(t.source)) continue;
        const Pair p{find(t.source), find(t.copy)};
        if (p.source < 0 && p.copy < 0) continue; // a middle stage
        if ((p.source < 0 || p.copy < 0) && groups.ppSize != 2)
            throw std::invalid_argument(t.source + " and " + t.copy + " are tied but lie on stages of a pipeline of " +
                                        std::to_string(groups.ppSize) + "; use parallel.pp = 1 or 2");
        if (p.copy >= 0) buckets.buckets()[static_cast<size_t>(p.copy)].tiedCopy = true;
        m_pairs.push_back(p);
    }
}

void TiedParameters::addGradients(const GradientReducer& reducer) {
    torch::NoGradGuard noGrad;
    for (const Pair& p : m_pairs) {
        if (p.source >= 0 && p.copy >= 0) {
            torch::Tensor source = reducer.reducedGrads(static_cast<size_t>(p.source));
            const torch::Tensor copy = reducer.reducedGrads(static_cast<size_t>(p.copy));
            source.add_(copy);
            copy.copy_(source);
            continue;
        }
        // The first stage holds the source, the last the copy: the same slice of each (same dp rank).
        torch::Tensor mine = reducer.reducedGrads(static_cast<size_t>(p.source >= 0 ? p.source : p.copy));
        m_pp->allReduce(mine, ReduceOp::Sum);
    }
}

} // namespace parallax
