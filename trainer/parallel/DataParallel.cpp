#include "trainer/parallel/DataParallel.h"

#include "trainer/compat/TorchCompat.h"
#include "trainer/models/Embedding.h"

#include <algorithm>
#include <stdexcept>

namespace parallax {

namespace {

// torch::embedding whose backward hands its token ids and output gradient to the data-parallel
// reducer instead of building the table's gradient; the table's accumulator still runs (with nothing
// to add), so the reducer's arrival hook fires as for any parameter.
struct ExchangedLookup : public torch::autograd::Function<ExchangedLookup> {
    static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& weight,
                                                  const torch::Tensor& tokens, DataParallel* reducer, int64_t bucket) {
        ctx->save_for_backward({tokens});
        ctx->saved_data["reducer"] = reinterpret_cast<int64_t>(reducer);
        ctx->saved_data["bucket"] = bucket;
        ctx->saved_data["width"] = weight.size(1);
        return {torch::embedding(weight, tokens)};
    }

    static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                   torch::autograd::variable_list grads) {
        const torch::Tensor tokens = ctx->get_saved_variables().at(0);
        auto* reducer = reinterpret_cast<DataParallel*>(ctx->saved_data["reducer"].toInt());
        const int64_t width = ctx->saved_data["width"].toInt();
        reducer->stashRows(static_cast<int>(ctx->saved_data["bucket"].toInt()), tokens.reshape({-1}),
                           grads.at(0).reshape({-1, width}));
        return {torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
    }
};

} // namespace

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

torch::Tensor DataParallel::gradNormSquared(bool includeReplicated) const {
    std::vector<torch::Tensor> held;
    for (size_t b = 0; b < m_buckets.buckets().size(); ++b) {
        const Bucket& bucket = m_buckets.buckets()[b];
        if (bucket.sharded || includeReplicated) held.push_back(m_stage == 2 ? m_gradShards[b] : bucket.grads);
    }
    return sumOfSquares(held);
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
    // A table's rows go at finishStep(), on the calling thread (its count check is a host
    // collective); they are the last gradients of backward anyway.
    if (++m_arrived[b] == m_expected[b] && !m_work[b] && !m_tables.count(bucket)) {
        launch(bucket);
        ++m_launchedEarly;
    }
    m_dp->progress();
}

bool DataParallel::exchangeRowsOf(Embedding& table, const std::string& name) {
    if (table.lookup || dpSize() < 2) return false;
    const auto& slots = m_buckets.slots();
    const auto slot = std::find_if(slots.begin(), slots.end(), [&](const ParamSlot& s) { return s.name == name; });
    if (slot == slots.end() || m_buckets.buckets()[static_cast<size_t>(slot->bucket)].slots.size() != 1 ||
        slot->offset != 0 || slot->shape.size() != 2)
        return false;
    const int bucket = slot->bucket;
    TableRows& t = m_tables[bucket];
    t.count = slot->shape[0];
    t.width = slot->shape[1];
    table.lookup = [this, bucket](const torch::Tensor& tokens, const torch::Tensor& weight) {
        if (!torch::GradMode::is_enabled() || !weight.requires_grad()) return torch::embedding(weight, tokens);
        return ExchangedLookup::apply(weight, tokens, this, static_cast<int64_t>(bucket))[0];
    };
    return true;
}

void DataParallel::stashRows(int bucket, const torch::Tensor& ids, const torch::Tensor& rows) {
    TableRows& t = m_tables.at(bucket);
    t.ids.push_back(ids.contiguous());
    t.rows.push_back(rows.contiguous());
}

void DataParallel::writeTableGradient(int bucket, const TableRows& t, const torch::Tensor& ids,
                                      const torch::Tensor& rows) {
    torch::NoGradGuard noGrad;
    Bucket& target = m_buckets.buckets()[static_cast<size_t>(bucket)];
    // Sorted segment sums on a GPU: the same bits on every rank and every run.
    const torch::Tensor table = at::embedding_dense_backward(rows, ids, t.count, /*padding_idx=*/-1, false);
    target.grads.narrow(0, 0, t.count * t.width).view({t.count, t.width}).copy_(table);
}

void DataParallel::launchRows(int bucket, TableRows& t) {
    const auto width = t.width;
    torch::Tensor ids = t.ids.empty() ? torch::empty({0}, torch::kLong) : torch::cat(t.ids);
    torch::Tensor rows = t.rows.empty() ? torch::empty({0, width}) : torch::cat(t.rows);
    t.ids.clear();
    t.rows.clear();
    const Bucket& target = m_buckets.buckets()[static_cast<size_t>(bucket)];
    ids = ids.to(target.grads.device());
    rows = rows.to(target.grads.device());
    // All-gathers need the same count everywhere: every rank learns whether that holds.
    const double n = static_cast<double>(ids.numel());
    if (m_dp->allReduceScalar(n, ReduceOp::Max) != m_dp->allReduceScalar(n, ReduceOp::Min)) {
        // This step reduces the whole table: this rank's gradient first, then as any bucket.
        writeTableGradient(bucket, t, ids, rows.to(target.grads.scalar_type()));
        t.sentIds = t.sentRows = torch::Tensor();
        launchWhole(bucket);
        return;
    }
    t.sentIds = ids;
    t.sentRows = rows.to(m_reduceType);
    t.gatheredIds = torch::empty({ids.numel() * dpSize()}, ids.options());
    t.gatheredRows = torch::empty({ids.numel() * dpSize(), width}, t.sentRows.options());
    t.idsWork = m_dp->allGatherAsync(t.gatheredIds, t.sentIds);
    m_work[static_cast<size_t>(bucket)] = m_dp->allGatherAsync(t.gatheredRows, t.sentRows);
    ++m_rowExchanges;
}

void DataParallel::finishRows(int bucket, TableRows& t) {
    if (!t.sentRows.defined()) return; // reduced whole
    t.idsWork->wait();
    const Bucket& target = m_buckets.buckets()[static_cast<size_t>(bucket)];
    writeTableGradient(bucket, t, t.gatheredIds, t.gatheredRows.to(target.grads.scalar_type()));
    if (m_stage == 2) m_gradShards[static_cast<size_t>(bucket)].copy_(target.grads.narrow(0, shardOffset(bucket), shardLength(bucket)));
    t.idsWork.reset();
    t.sentIds = t.sentRows = t.gatheredIds = t.gatheredRows = torch::Tensor();
}

void DataParallel::launch(int bucket) {
    const auto table = m_tables.find(bucket);
    if (table != m_tables.end()) launchRows(bucket, table->second);
    else launchWhole(bucket);
}

void DataParallel::launchWhole(int bucket) {
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
        // Same order on every rank: the graph, hence arrival, is identical across replicas.
        for (size_t b = 0; b < m_work.size(); ++b)
            if (!m_work[b]) launch(static_cast<int>(b));
        for (size_t b = 0; b < m_work.size(); ++b) {
            m_work[b]->wait();
            m_work[b].reset();
            const auto table = m_tables.find(static_cast<int>(b));
            if (table != m_tables.end()) finishRows(static_cast<int>(b), table->second);
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
    if (m_stage == 0 || dpSize() == 1) return;
    std::vector<std::shared_ptr<Work>> works;
    std::vector<torch::Tensor> slices;
    for (size_t b = 0; b < m_buckets.buckets().size(); ++b) {
        slices.push_back(paramShard(b).clone());
        works.push_back(m_dp->allGatherAsync(m_buckets.buckets()[b].params, slices.back()));
    }
    for (auto& w : works) w->wait();
}

} // namespace parallax
