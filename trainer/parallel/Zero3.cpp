#include "trainer/parallel/Zero3.h"

#include "trainer/compat/TorchCompat.h"

#include <algorithm>
#include <stdexcept>

namespace parallax {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Identity on a unit's outputs whose backward runs before any backward op of the unit, which is
// when the unit's whole parameters must be back.
struct GatherBeforeBackward : public torch::autograd::Function<GatherBeforeBackward> {
    // A TensorList (not a std::vector) so that autograd tracks the tensors as inputs.
    static variable_list forward(AutogradContext* ctx, at::TensorList outputs, int64_t zero, int64_t unit) {
        ctx->saved_data["zero"] = zero;
        ctx->saved_data["unit"] = unit;
        return outputs.vec();
    }
    static variable_list backward(AutogradContext* ctx, variable_list grads) {
        auto* z = reinterpret_cast<Zero3*>(ctx->saved_data["zero"].toInt());
        z->gatherForBackward(static_cast<int>(ctx->saved_data["unit"].toInt()));
        grads.push_back(torch::Tensor());
        grads.push_back(torch::Tensor());
        return grads;
    }
};

class Zero3Unit : public Unit {
public:
    Zero3Unit(std::shared_ptr<Unit> inner, Zero3* zero, int index)
        : m_inner(std::move(inner)), m_zero(zero), m_index(index) {}
    Activation forward(const Activation& in, const Batch& batch) override {
        m_zero->gatherForForward(m_index);
        Activation out = m_inner->forward(in, batch);
        m_zero->releaseAfterForward(m_index);
        // Only floating outputs that autograd tracks need the hook; others pass through.
        variable_list tracked;
        std::vector<size_t> where;
        for (size_t i = 0; i < out.size(); ++i) {
            if (out[i].requires_grad()) {
                tracked.push_back(out[i]);
                where.push_back(i);
            }
        }
        if (!tracked.empty()) {
            variable_list hooked = GatherBeforeBackward::apply(at::TensorList(tracked),
                                                               static_cast<int64_t>(reinterpret_cast<intptr_t>(m_zero)),
                                                               static_cast<int64_t>(m_index));
            for (size_t j = 0; j < where.size(); ++j) out[where[j]] = hooked[j];
        }
        return out;
    }
    std::string kindName() const override { return m_inner->kindName(); }
    bool checkpointUnit() const override { return m_inner->checkpointUnit(); }

private:
    std::shared_ptr<Unit> m_inner;
    Zero3* m_zero;
    int m_index;
};

} // namespace

Zero3::Zero3(GradBuckets& buckets, std::shared_ptr<Communicator> dp, torch::ScalarType reduceType)
    : m_buckets(buckets), m_dp(std::move(dp)), m_reduceType(reduceType) {
    torch::NoGradGuard noGrad;
    auto& all = m_buckets.buckets();
    for (size_t b = 0; b < all.size(); ++b) {
        Bucket& bucket = all[b];
        if (bucket.unit < 0) throw std::logic_error("ZeRO-3 needs every bucket to belong to one unit");
        if (bucket.numel() % dpSize() != 0) throw std::logic_error("ZeRO-3 buckets must be padded to a multiple of dp");
        m_paramShards.push_back(bucket.params.narrow(0, shardOffset(b), shardLength(b)).clone());
        m_gradShards.push_back(torch::zeros_like(m_paramShards.back()));
        UnitState& u = m_units[bucket.unit];
        u.buckets.push_back(b);
        u.slots += static_cast<int>(bucket.slots.size());
        u.reduced.emplace_back();
        u.wireIn.emplace_back();
        u.inPlace.push_back(0);
        u.present.push_back(0);
        compat::releaseStorage(bucket.params);
        compat::releaseStorage(bucket.grads);
    }
    m_forwardOnly.assign(all.size(), 0);
    m_productShards.resize(all.size());
    m_productWholes.resize(all.size());
    m_gradWritten.assign(all.size(), 0);
    for (const ParamSlot& s : m_buckets.slots()) {
        const int unit = all[static_cast<size_t>(s.bucket)].unit;
        m_accumulators.push_back(compat::addPostAccumulateHook(s.param, [this, unit] { onGradReady(unit); }));
    }
}

Zero3::~Zero3() {
    // Gathers started ahead for a step that did not come must end before their tensors go.
    for (auto& [index, u] : m_units)
        for (auto& w : u.gathering) w->wait();
}

std::vector<size_t> Zero3::forwardBucketOrder() const {
    std::vector<size_t> order;
    std::vector<char> placed(m_buckets.buckets().size(), 0);
    for (int unit : m_order)
        for (size_t b : m_units.at(unit).buckets) {
            order.push_back(b);
            placed[b] = 1;
        }
    for (size_t b = 0; b < placed.size(); ++b)
        if (!placed[b]) order.push_back(b); // units that are not wrapped keep their place after the rest
    return order;
}

void Zero3::useProductCopies(torch::ScalarType type, const std::map<std::string, Linear*>& layers) {
    std::set<std::string> names;
    for (const auto& [name, layer] : layers) names.insert(name);
    const auto& slots = m_buckets.slots();
    m_productLayers.assign(slots.size(), nullptr);
    for (size_t i = 0; i < slots.size(); ++i) {
        const auto it = layers.find(slots[i].name);
        if (it == layers.end()) continue;
        if (it->second->weight.unsafeGetTensorImpl() != slots[i].param.unsafeGetTensorImpl())
            throw std::logic_error("ZeRO-3 product copies: " + slots[i].name + " is not that layer's weight");
        m_productLayers[i] = it->second;
    }
    for (size_t b = 0; b < m_productShards.size(); ++b)
        m_productShards[b] = m_forwardOnly[b] && allNamed(b, names)
                                 ? torch::empty_like(m_paramShards[b], m_paramShards[b].options().dtype(type))
                                 : torch::Tensor();
    refreshProductCopies();
}

size_t Zero3::productCopiesSet() const {
    size_t set = 0;
    for (const Linear* layer : m_productLayers) set += layer && layer->product_weight.defined() ? 1 : 0;
    return set;
}

void Zero3::castProductShard(size_t b) {
    if (!m_productShards[b].defined()) return;
    torch::NoGradGuard noGrad;
    m_productShards[b].copy_(m_paramShards[b]);
}

void Zero3::refreshProductCopies() {
    for (size_t b = 0; b < m_productShards.size(); ++b) castProductShard(b);
}

void Zero3::shardUpdated(size_t bucket) {
    castProductShard(bucket); // on the optimizer's stream, before the unit's mark
    const int unit = m_buckets.buckets()[bucket].unit;
    UnitState& u = m_units.at(unit);
    if (++u.updated < u.buckets.size()) return;
    u.updated = 0;
    if (m_hooks.afterUnitUpdated) m_hooks.afterUnitUpdated(unit);
    if (!m_prefetchNext) return;
    const auto first = m_order.begin(), last = first + std::min<std::ptrdiff_t>(kPrefetchUnits, static_cast<std::ptrdiff_t>(m_order.size()));
    if (std::find(first, last, unit) == last) return;
    startGather(unit, false);
    u.prefetched = true;
}

void Zero3::beforeGradWrite() {
    if (m_gradWriteWaited) return;
    m_gradWriteWaited = true;
    if (m_hooks.beforeGradWrite) m_hooks.beforeGradWrite();
}

void Zero3::accumulateGradShard(size_t b, const torch::Tensor& part) {
    beforeGradWrite();
    if (m_gradWritten[b]) {
        m_gradShards[b].add_(part);
        return;
    }
    m_gradShards[b].copy_(part); // in fp32 whatever the part's dtype
    m_gradWritten[b] = 1;
}

GradientReducer::OptimizerPlan Zero3::optimizerPlan() {
    OptimizerPlan plan;
    plan.order = forwardBucketOrder();
    plan.afterGroup = [this](size_t b) { shardUpdated(b); };
    plan.ownStream = true;
    return plan;
}

void Zero3::loadParameterValues(const ParamSlot& s, const torch::Tensor& flat) {
    const size_t b = static_cast<size_t>(s.bucket);
    const int64_t shardBegin = shardOffset(b);
    const int64_t lo = std::max(shardBegin, s.offset);
    const int64_t hi = std::min(shardBegin + shardLength(b), s.offset + s.numel);
    if (hi > lo) m_paramShards[b].narrow(0, lo - shardBegin, hi - lo).copy_(flat.narrow(0, lo - s.offset, hi - lo));
}

std::string Zero3::residencyNote() const {
    const int64_t held = residentParameterValues(), total = totalParameterValues();
    return "ZeRO-3: this rank holds " + std::to_string(held) + " of " + std::to_string(total) +
           " parameter values between steps (" +
           std::to_string(100.0 * double(held) / double(std::max<int64_t>(1, total))) + "%), plus " +
           std::to_string(prefetchedParameterValues()) + " of the next step's first units gathered ahead";
}

void Zero3::wrapUnits(std::vector<StageChunk>& chunks) {
    m_order.clear();
    for (StageChunk& chunk : chunks) {
        for (size_t u = 0; u < chunk.units.size(); ++u) {
            auto& unit = chunk.units[u];
            const int index = chunk.indices.at(u);
            if (!m_units.count(index)) continue; // nothing to shard (no trainable parameters)
            m_order.push_back(index);
            unit = std::make_shared<Zero3Unit>(unit, this, index);
        }
    }
}

int64_t Zero3::shardLength(size_t b) const {
    return m_buckets.buckets()[b].numel() / dpSize();
}

int64_t Zero3::shardOffset(size_t b) const {
    return shardLength(b) * (m_dp ? m_dp->rank() : 0);
}

int Zero3::neighbour(int unit, int direction) const {
    auto it = std::find(m_order.begin(), m_order.end(), unit);
    if (it == m_order.end()) return -1;
    const auto pos = (it - m_order.begin()) + direction;
    return pos >= 0 && pos < static_cast<long>(m_order.size()) ? m_order[static_cast<size_t>(pos)] : -1;
}

bool Zero3::allNamed(size_t b, const std::set<std::string>& names) const {
    const Bucket& bucket = m_buckets.buckets()[b];
    bool all = !bucket.slots.empty();
    for (int slot : bucket.slots) all = all && names.count(m_buckets.slots()[static_cast<size_t>(slot)].name) > 0;
    return all;
}

void Zero3::setForwardOnlyParameters(const std::set<std::string>& names) {
    for (size_t b = 0; b < m_forwardOnly.size(); ++b) m_forwardOnly[b] = allNamed(b, names) ? 1 : 0;
}

void Zero3::startGather(int unit, bool forBackward) {
    UnitState& u = m_units.at(unit);
    bool waited = false;
    for (size_t i = 0; i < u.buckets.size(); ++i) {
        const size_t b = u.buckets[i];
        if (u.present[i] || (forBackward && m_forwardOnly[b])) continue;
        if (!waited && m_hooks.beforeGather) m_hooks.beforeGather(unit);
        waited = true;
        if (m_productShards[b].defined()) {
            gatherProductCopies(u, i);
            continue;
        }
        Bucket& bucket = m_buckets.buckets()[b];
        compat::restoreStorage(bucket.params);
        u.present[i] = 1;
        if (dpSize() == 1) {
            bucket.params.copy_(m_paramShards[b]);
            continue;
        }
        u.gatherInputs.push_back(m_paramShards[b]);
        u.gathering.push_back(m_dp->allGatherAsync(bucket.params, m_paramShards[b]));
    }
    // Nothing in flight (one rank copies at once): what is needed is here.
    if (u.gathering.empty()) u.gathered = true;
}

void Zero3::gatherProductCopies(UnitState& u, size_t i) {
    const size_t b = u.buckets[i];
    const Bucket& bucket = m_buckets.buckets()[b];
    const torch::Tensor& slice = m_productShards[b];
    torch::Tensor whole = torch::empty({bucket.numel()}, slice.options());
    for (int index : bucket.slots) {
        const ParamSlot& s = m_buckets.slots()[static_cast<size_t>(index)];
        m_productLayers.at(static_cast<size_t>(index))->product_weight = whole.narrow(0, s.offset, s.numel).view(s.shape);
    }
    m_productWholes[b] = whole;
    u.present[i] = 1;
    if (dpSize() == 1) {
        whole.copy_(slice);
        return;
    }
    u.gatherInputs.push_back(slice);
    u.gathering.push_back(m_dp->allGatherAsync(whole, slice));
}

void Zero3::waitGather(int unit, bool forBackward) {
    UnitState& u = m_units.at(unit);
    startGather(unit, forBackward);
    for (auto& w : u.gathering) w->wait();
    u.gathering.clear();
    u.gatherInputs.clear();
    u.gathered = true;
}

void Zero3::releaseParams(UnitState& u, bool keepVectors) {
    for (size_t i = 0; i < u.buckets.size(); ++i) {
        const size_t b = u.buckets[i];
        const Bucket& bucket = m_buckets.buckets()[b];
        if (keepVectors && !bucket.decay && u.present[i]) continue;
        if (compat::storageAllocated(bucket.params)) compat::releaseStorage(bucket.params);
        if (m_productWholes[b].defined()) {
            // Products that ran keep their copies for backward (autograd holds them), not this list.
            for (int index : bucket.slots) m_productLayers.at(static_cast<size_t>(index))->product_weight = torch::Tensor();
            m_productWholes[b] = torch::Tensor();
        }
        u.present[i] = 0;
    }
}

void Zero3::gatherForForward(int unit) {
    waitGather(unit, false);
    m_units.at(unit).prefetched = false;
    const int next = neighbour(unit, +1);
    if (next >= 0) startGather(next, false);
}

void Zero3::releaseAfterForward(int unit) {
    UnitState& u = m_units.at(unit);
    releaseParams(u, /*keepVectors=*/true);
    u.gathered = false;
}

void Zero3::gatherForBackward(int unit) {
    UnitState& u = m_units.at(unit);
    if (u.gradsLive) return; // another output of the unit already brought it back
    completeReduce(unit, /*keepVectors=*/true); // the last micro-batch's; this one's forward left the vectors
    waitGather(unit, true);
    for (size_t b : u.buckets) {
        Bucket& bucket = m_buckets.buckets()[b];
        compat::restoreStorage(bucket.grads);
        bucket.grads.zero_();
    }
    u.gradsLive = true;
    u.arrived = 0;
    const int previous = neighbour(unit, -1);
    if (previous >= 0) startGather(previous, true);
}

void Zero3::onGradReady(int unit) {
    UnitState& u = m_units.at(unit);
    if (++u.arrived == u.slots) startReduce(unit);
    if (m_dp) m_dp->progress();
}

void Zero3::startReduce(int unit) {
    UnitState& u = m_units.at(unit);
    if (!u.gradsLive) return;
    for (size_t i = 0; i < u.buckets.size(); ++i) {
        const size_t b = u.buckets[i];
        Bucket& bucket = m_buckets.buckets()[b];
        if (dpSize() == 1) {
            accumulateGradShard(b, bucket.grads);
            continue;
        }
        const bool cast = bucket.grads.scalar_type() != m_reduceType;
        u.wireIn[i] = cast ? bucket.grads.to(m_reduceType) : bucket.grads;
        // The step's first part of a slice, reduced in fp32, lands in the slice itself: nothing to
        // copy when the reduction completes (at the end of backward, where the GPU would wait for it).
        u.inPlace[i] = !cast && !m_gradWritten[b];
        if (u.inPlace[i]) {
            beforeGradWrite();
            m_gradWritten[b] = 1;
            u.reduced[i] = m_gradShards[b];
        } else {
            u.reduced[i] = torch::empty({m_gradShards[b].numel()}, u.wireIn[i].options());
        }
        u.reducing.push_back(m_dp->reduceScatterAsync(u.reduced[i], u.wireIn[i], ReduceOp::Sum));
    }
    u.gradsLive = false;
    u.arrived = 0;
    if (u.reducing.empty()) completeReduce(unit, false);
}

void Zero3::completeReduce(int unit, bool keepVectors) {
    UnitState& u = m_units.at(unit);
    if (u.gradsLive) return;
    for (auto& w : u.reducing) w->wait();
    if (!u.reducing.empty()) {
        for (size_t i = 0; i < u.buckets.size(); ++i) {
            if (!u.inPlace[i]) accumulateGradShard(u.buckets[i], u.reduced[i]); // in fp32 whatever the wire's dtype
            u.reduced[i] = u.wireIn[i] = torch::Tensor();
            u.inPlace[i] = 0;
        }
    }
    u.reducing.clear();
    for (size_t b : u.buckets) {
        Bucket& bucket = m_buckets.buckets()[b];
        if (compat::storageAllocated(bucket.grads)) compat::releaseStorage(bucket.grads);
    }
    if (!u.gathered && u.gathering.empty()) releaseParams(u, keepVectors);
}

void Zero3::beginStep(int) {
    // No zeroing here: the first part of each slice is copied in (accumulateGradShard), so the
    // optimizer may still be reading the last step's slices while this step's forward runs.
    std::fill(m_gradWritten.begin(), m_gradWritten.end(), 0);
    m_gradWriteWaited = false;
}

void Zero3::afterMicroBatch() {
    // Units whose gradients did not all arrive (parameters unused by this micro-batch) are reduced
    // now, in unit order, the same on every rank.
    for (auto& [index, u] : m_units)
        if (u.gradsLive) startReduce(index);
}

void Zero3::finishStep() {
    afterMicroBatch();
    for (auto& [index, u] : m_units) {
        completeReduce(index, false);
        // A prefetch started at the end of backward is not needed until the next forward.
        for (auto& w : u.gathering) w->wait();
        u.gathering.clear();
        u.gatherInputs.clear();
        u.gathered = false;
        releaseParams(u, false);
    }
    // Slices no gradient reached this step (parameters this step did not use).
    for (size_t b = 0; b < m_gradShards.size(); ++b) {
        if (m_gradWritten[b]) continue;
        beforeGradWrite();
        m_gradShards[b].zero_();
        m_gradWritten[b] = 1;
    }
}

torch::Tensor Zero3::gradNormSquared(bool includeReplicated) const {
    return reducedNormSquared(*this, m_buckets, includeReplicated);
}

int64_t Zero3::wholeParameterValues(bool prefetched) const {
    int64_t n = 0;
    for (const auto& [index, u] : m_units) {
        if (u.prefetched != prefetched) continue;
        for (size_t b : u.buckets) {
            n += static_cast<int64_t>(m_buckets.buckets()[b].params.storage().nbytes() / sizeof(float));
            if (m_productWholes[b].defined()) n += m_productWholes[b].numel();
        }
    }
    return n;
}

int64_t Zero3::residentParameterValues() const {
    int64_t n = wholeParameterValues(false);
    for (const auto& s : m_paramShards) n += s.numel();
    return n;
}

int64_t Zero3::prefetchedParameterValues() const {
    return wholeParameterValues(true);
}

int64_t Zero3::totalParameterValues() const {
    int64_t n = 0;
    for (const Bucket& b : m_buckets.buckets()) n += b.used;
    return n;
}

} // namespace parallax
