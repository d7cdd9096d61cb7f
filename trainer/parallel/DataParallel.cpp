#include "trainer/parallel/DataParallel.h"

#include "trainer/compat/TorchCompat.h"

#include <stdexcept>

namespace parallax {

DataParallel::DataParallel(GradBuckets& buckets, std::shared_ptr<Communicator> dp, int zeroStage,
                           torch::ScalarType reduceType)
    : m_buckets(buckets), m_dp(std::move(dp)), m_stage(zeroStage), m_reduceType(reduceType) {
    if (m_stage < 0 || m_stage > 2) throw std::invalid_argument("DataParallel handles ZeRO stages 0 to 2");
    const size_t n = m_buckets.buckets().size();
    m_arrived.assign(n, 0);
    m_expected.assign(n, 0);
    m_work.resize(n);
    m_wireIn.resize(n);
    m_wireOut.resize(n);
    for (size_t b = 0; b < n; ++b) {
        if (m_stage > 0 && m_buckets.buckets()[b].numel() % dpSize() != 0)
            throw std::logic_error("ZeRO buckets must be padded to a multiple of the data-parallel size");
        if (m_stage == 2) m_gradShards.push_back(torch::zeros({shardLength(b)}, m_buckets.buckets()[b].grads.options()));
    }
    for (const ParamSlot& s : m_buckets.slots()) {
        const int bucket = s.bucket;
        m_accumulators.push_back(compat::addPostAccumulateHook(s.param, [this, bucket] { onGradReady(bucket); }));
    }
}

int64_t DataParallel::shardLength(size_t b) const {
    const int64_t n = m_buckets.buckets()[b].numel();
    return m_stage == 0 ? n : n / dpSize();
}

int64_t DataParallel::shardOffset(size_t b) const {
    return m_stage == 0 ? 0 : shardLength(b) * dpRank();
}

torch::Tensor DataParallel::paramShard(size_t b) const {
    return m_buckets.buckets()[b].params.narrow(0, shardOffset(b), shardLength(b));
}

torch::Tensor DataParallel::gradShard(size_t b) const {
    if (m_stage == 2) return m_gradShards[b];
    return m_buckets.buckets()[b].grads.narrow(0, shardOffset(b), shardLength(b));
}

torch::Tensor DataParallel::reducedGrads(size_t b) const {
    return m_stage == 2 ? m_gradShards[b] : m_buckets.buckets()[b].grads;
}

torch::Tensor DataParallel::gradNormSquared(bool includeReplicated) const {
    return reducedNormSquared(*this, m_buckets, includeReplicated);
}

void DataParallel::loadParameterValues(const ParamSlot& s, const torch::Tensor& flat) {
    m_buckets.buckets()[static_cast<size_t>(s.bucket)].params.narrow(0, s.offset, s.numel).copy_(flat);
}

void DataParallel::beginStep(int arrivalsPerParam) {
    m_buckets.zeroGrads();
    m_active = m_dp && m_dp->size() > 1;
    std::fill(m_arrived.begin(), m_arrived.end(), 0);
    m_nextLaunch = 0;
    for (size_t b = 0; b < m_expected.size(); ++b)
        m_expected[b] = arrivalsPerParam * static_cast<int>(m_buckets.buckets()[b].slots.size());
}

void DataParallel::onGradReady(int bucket) {
    if (!m_active || !m_launchDuringBackward) return;
    ++m_arrived[static_cast<size_t>(bucket)];
    // In bucket order only: a bucket complete here may be incomplete on another rank (a parameter
    // that this rank's data leaves without a gradient), which then starts it in finishStep(); the
    // collectives must start in the same order on every rank, so a complete bucket waits for the
    // ones before it.
    while (m_nextLaunch < m_work.size() && m_arrived[m_nextLaunch] == m_expected[m_nextLaunch]) {
        launch(static_cast<int>(m_nextLaunch++));
        ++m_launchedEarly;
    }
    m_dp->progress();
}

void DataParallel::launch(int bucket) {
    const size_t b = static_cast<size_t>(bucket);
    Bucket& target = m_buckets.buckets()[b];
    if (target.grads.scalar_type() != m_reduceType) {
        // Both copies live until finishStep(): the reduction reads and writes them asynchronously.
        m_wireIn[b] = target.grads.to(m_reduceType);
        m_wireOut[b] = m_stage == 2 ? torch::empty({shardLength(b)}, m_wireIn[b].options()) : m_wireIn[b];
        m_work[b] = m_stage == 2 ? m_dp->reduceScatterAsync(m_wireOut[b], m_wireIn[b], ReduceOp::Sum)
                                 : m_dp->allReduceAsync(m_wireOut[b], ReduceOp::Sum);
    } else if (m_stage == 2) {
        m_work[b] = m_dp->reduceScatterAsync(m_gradShards[b], target.grads, ReduceOp::Sum);
    } else {
        m_work[b] = m_dp->allReduceAsync(target.grads, ReduceOp::Sum);
    }
}

void DataParallel::finishStep() {
    if (m_active) {
        // The rest in bucket order, as the ones started during backward: the same order on every rank
        // (buckets whose parameters got no gradient on any rank among them, with zeros).
        for (; m_nextLaunch < m_work.size(); ++m_nextLaunch) launch(static_cast<int>(m_nextLaunch));
        for (size_t b = 0; b < m_work.size(); ++b) {
            m_work[b]->wait();
            m_work[b].reset();
            if (!m_wireOut[b].defined()) continue;
            (m_stage == 2 ? m_gradShards[b] : m_buckets.buckets()[b].grads).copy_(m_wireOut[b]);
            m_wireIn[b] = m_wireOut[b] = torch::Tensor();
        }
    } else if (m_stage == 2) {
        // One data-parallel rank: its slice is the whole bucket.
        for (size_t b = 0; b < m_gradShards.size(); ++b) m_gradShards[b].copy_(m_buckets.buckets()[b].grads);
    }
    m_active = false;
}

void DataParallel::afterOptimizerStep() {
    if (m_stage > 0 && dpSize() > 1) {
        std::vector<std::shared_ptr<Work>> works;
        std::vector<torch::Tensor> slices;
        for (size_t b = 0; b < m_buckets.buckets().size(); ++b) {
            slices.push_back(paramShard(b).clone());
            works.push_back(m_dp->allGatherAsync(m_buckets.buckets()[b].params, slices.back()));
        }
        for (auto& w : works) w->wait();
    }
    if (m_productCopies) m_productCopies->refresh();
}

void DataParallel::parametersLoaded() {
    if (!m_productCopies) return;
    m_productCopies->refresh();
    m_productCopies->refreshFrozen();
}

void DataParallel::useProductCopies(std::unique_ptr<ProductCopies> copies) { m_productCopies = std::move(copies); }

} // namespace parallax
