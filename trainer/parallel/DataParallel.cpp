#include "trainer/parallel/DataParallel.h"

#include "trainer/compat/TorchCompat.h"

namespace parallax {

DataParallel::DataParallel(GradBuckets& buckets, std::shared_ptr<Communicator> dp)
    : m_buckets(buckets), m_dp(std::move(dp)) {
    const auto& slots = m_buckets.slots();
    m_arrived.assign(m_buckets.buckets().size(), 0);
    m_expected.assign(m_buckets.buckets().size(), 0);
    m_work.resize(m_buckets.buckets().size());
    for (const ParamSlot& s : slots) {
        const int bucket = s.bucket;
        m_accumulators.push_back(compat::addPostAccumulateHook(s.param, [this, bucket] { onGradReady(bucket); }));
    }
}

void DataParallel::beginStep(int arrivalsPerParam) {
    m_active = m_dp && m_dp->size() > 1;
    std::fill(m_arrived.begin(), m_arrived.end(), 0);
    for (size_t b = 0; b < m_expected.size(); ++b)
        m_expected[b] = arrivalsPerParam * static_cast<int>(m_buckets.buckets()[b].slots.size());
}

void DataParallel::onGradReady(int bucket) {
    if (!m_active) return;
    const size_t b = static_cast<size_t>(bucket);
    if (++m_arrived[b] == m_expected[b] && !m_work[b]) {
        launch(bucket);
        ++m_launchedEarly;
    }
    m_dp->progress();
}

void DataParallel::launch(int bucket) {
    const size_t b = static_cast<size_t>(bucket);
    m_work[b] = m_dp->allReduceAsync(m_buckets.buckets()[b].grads, ReduceOp::Sum);
}

void DataParallel::finishStep() {
    if (m_active) {
        // Same order on every rank: the graph, hence arrival, is identical across replicas.
        for (size_t b = 0; b < m_work.size(); ++b)
            if (!m_work[b]) launch(static_cast<int>(b));
        for (auto& w : m_work) {
            w->wait();
            w.reset();
        }
    }
    m_active = false;
}

} // namespace parallax
