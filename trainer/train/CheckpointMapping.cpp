#include "trainer/train/CheckpointMapping.h"

#include "trainer/train/AgreedFailure.h"

#include <algorithm>
#include <chrono>

namespace parallax {

namespace {

// What a run whose checkpoint failed can be resumed from.
std::string resumePoint(const std::string& checkpointsDir, const std::string& resumedFrom) {
    const std::vector<std::string> complete = listCheckpoints(checkpointsDir);
    if (!complete.empty())
        return "the last complete checkpoint is step " + std::to_string(checkpointStep(complete.front())) + " (" +
               complete.front() + ")";
    if (!resumedFrom.empty()) return "no checkpoint of this run is complete; it resumed from " + resumedFrom;
    return "no checkpoint of this run is complete";
}

double monotonicSeconds() {
    using namespace std::chrono;
    return duration<double>(steady_clock::now().time_since_epoch()).count();
}

} // namespace

CheckpointPiece CheckpointMapping::pieceOf(const std::string& name, const std::string& role,
                                           const torch::Tensor& local, const std::vector<int64_t>& localShape) const {
    CheckpointPiece p;
    p.name = name;
    p.role = role;
    p.data = local.reshape({-1});
    p.flat_length = local.numel();
    auto shard = m_tpPlan.find(name);
    if (shard != m_tpPlan.end()) {
        p.shape = shard->second.fullShape;
        p.slab_dim = shard->second.dim;
        p.slab_start = shard->second.start;
        p.slab_length = shard->second.length;
    } else {
        p.shape = localShape;
    }
    return p;
}

torch::Tensor CheckpointMapping::localPart(const std::string& name, const torch::Tensor& full) const {
    auto shard = m_tpPlan.find(name);
    if (shard == m_tpPlan.end()) return full;
    return full.narrow(shard->second.dim, shard->second.start, shard->second.length);
}

std::vector<CheckpointPiece> CheckpointMapping::pieces() const {
    std::vector<CheckpointPiece> pieces;
    const bool writesReplicated = m_groups.coord.tp == 0;
    const bool sliced = m_reducer.optimizerSliced();
    const auto& slots = m_buckets.slots();
    const auto& groups = m_optimizer.groups();
    for (size_t i = 0; i < slots.size(); ++i) {
        const ParamSlot& s = slots[i];
        if (!s.sharded && !writesReplicated) continue;
        if (!sliced && static_cast<int>(i % static_cast<size_t>(m_groups.dpSize)) != m_groups.coord.dp) continue;
        const size_t b = static_cast<size_t>(s.bucket);
        const int64_t shardBegin = m_reducer.shardOffset(b);
        const int64_t lo = std::max(shardBegin, s.offset);
        const int64_t hi = std::min(shardBegin + m_reducer.shardLength(b), s.offset + s.numel);
        if (hi <= lo) continue;
        const AdamW::Group& g = groups[b];
        const std::pair<const char*, torch::Tensor> roles[] = {
            {"param", g.param}, {"exp_avg", g.exp_avg}, {"exp_avg_sq", g.exp_avg_sq}};
        for (const auto& [role, flat] : roles) {
            CheckpointPiece p = pieceOf(s.name, role, flat.narrow(0, lo - shardBegin, hi - lo), s.shape);
            p.flat_offset = lo - s.offset;
            pieces.push_back(std::move(p));
        }
    }
    // Frozen parameters are not written: they are what the run started from (the seed, or the model
    // folder), which a resume rebuilds.
    return pieces;
}

void CheckpointMapping::requireTrainable(const CheckpointReader& reader, const ParamSlot& s) const {
    auto shard = m_tpPlan.find(s.name);
    const std::vector<int64_t> shape = shard != m_tpPlan.end() ? shard->second.fullShape : s.shape;
    const std::string advice = "; resume with the model and [finetune] (mode, lora_r, lora_targets, freeze switches, "
                               "modules_to_save) it was written with, or start a new run";
    if (!reader.has(s.name, "param"))
        throw CheckpointError("checkpoint " + reader.dir() + " holds no " + s.name +
                              ", which this run trains: it was written by a run that trains other parameters" + advice);
    const std::vector<int64_t> saved = reader.shape(s.name, "param");
    if (saved != shape)
        throw CheckpointError("checkpoint " + reader.dir() + " holds " + s.name + " as " + shapeText(saved) +
                              ", this run as " + shapeText(shape) + advice);
}

void CheckpointMapping::loadFrozen(const CheckpointReader& reader, torch::Device device) {
    for (const auto& item : m_model.named_parameters()) {
        if (item.value().requires_grad()) continue;
        if (reader.has(item.key(), "param")) {
            // Written by an earlier version, or by a run that trained it: its values win.
            item.value().copy_(localPart(item.key(), reader.full(item.key(), "param")).to(device).view_as(item.value()));
            continue;
        }
        if (m_baseSeed && *m_baseSeed != reader.meta().seed)
            throw CheckpointError("checkpoint " + reader.dir() + " was written by a run whose frozen parameters (" +
                                  item.key() + ", ...) came from train.seed = " + std::to_string(reader.meta().seed) +
                                  "; this run draws them from train.seed = " + std::to_string(*m_baseSeed) +
                                  ": resume with train.seed = " + std::to_string(reader.meta().seed));
    }
}

void CheckpointMapping::load(const CheckpointReader& reader, torch::Device device) {
    torch::NoGradGuard noGrad;
    auto& groups = m_optimizer.groups();
    auto load = [&](const std::string& name, const std::string& role) {
        return localPart(name, reader.full(name, role)).reshape({-1}).to(device);
    };
    for (const ParamSlot& s : m_buckets.slots()) requireTrainable(reader, s);
    for (const ParamSlot& s : m_buckets.slots()) {
        const size_t b = static_cast<size_t>(s.bucket);
        AdamW::Group& g = groups[b];
        m_reducer.loadParameterValues(s, load(s.name, "param"));
        // The part of this parameter inside the slice the optimizer holds (all of it without ZeRO).
        const int64_t shardBegin = m_reducer.shardOffset(b);
        const int64_t lo = std::max(shardBegin, s.offset);
        const int64_t hi = std::min(shardBegin + m_reducer.shardLength(b), s.offset + s.numel);
        if (hi <= lo || !reader.has(s.name, "exp_avg")) continue;
        g.exp_avg.narrow(0, lo - shardBegin, hi - lo).copy_(load(s.name, "exp_avg").narrow(0, lo - s.offset, hi - lo));
        g.exp_avg_sq.narrow(0, lo - shardBegin, hi - lo)
            .copy_(load(s.name, "exp_avg_sq").narrow(0, lo - s.offset, hi - lo));
    }
    loadFrozen(reader, device);
    m_reducer.parametersLoaded();
}

void CheckpointMapping::loadWeights(const WeightSource& source) {
    torch::NoGradGuard noGrad;
    // The source holds every parameter of the model it was made for; what it lacks was added to
    // the model since (LoRA adapters), with values of its own.
    // A view of the mapped tensor, narrowed to this rank's slab: the reducer copies what it keeps
    // (under ZeRO-3 its range only), converting to the parameter's dtype and device as it copies. A
    // row-split slab is not contiguous in the file; flattening it gathers the slab first.
    for (const ParamSlot& s : m_buckets.slots())
        if (source.has(s.name)) m_reducer.loadParameterValues(s, localPart(s.name, source.full(s.name)).reshape({-1}));
    for (const auto& item : m_model.named_parameters()) {
        if (item.value().requires_grad() || !source.has(item.key())) continue; // trained: in a slot above
        item.value().copy_(localPart(item.key(), source.full(item.key())).view_as(item.value()));
    }
    m_reducer.parametersLoaded();
}

std::string CheckpointMapping::save(const std::string& dir, CheckpointMeta meta, TelemetryEmitter& out,
                                    const std::string& resumedFrom) {
    const double start = monotonicSeconds();
    meta.optimizer_steps = m_optimizer.stepCount();
    SavedCheckpoint saved;
    try {
        saved = saveCheckpoint(dir, meta, pieces(), *m_groups.world);
    } catch (const CheckpointError& e) {
        // Every rank has the same message (saveCheckpoint agrees on it), so every rank ends the run
        // alike; it gains what a resume would start from.
        throw AgreedFailure(std::string(e.what()) + "; " + resumePoint(dir, resumedFrom), meta.step);
    }
    const double bytes = m_groups.world->allReduceScalar(static_cast<double>(saved.bytes), ReduceOp::Sum);
    if (m_groups.worldRank() == 0) {
        CheckpointEvent e;
        e.step = meta.step;
        e.path = saved.dir;
        e.bytes = static_cast<int64_t>(bytes);
        e.ms = (monotonicSeconds() - start) * 1e3;
        e.layout = meta.layout;
        e.t = TelemetryEmitter::now();
        out.emit(e);
    }
    return saved.dir;
}

CheckpointMeta CheckpointMapping::resume(const std::string& from, const ModelDims& dims, torch::Device device,
                                         TelemetryEmitter& out) {
    CheckpointReader reader(from);
    for (const std::string& w : reader.warnings())
        if (m_groups.worldRank() == 0) out.warn(w);
    reader.requireCompatible(dims);
    load(reader, device);
    m_optimizer.setStepCount(reader.meta().optimizer_steps);
    if (m_groups.worldRank() == 0)
        out.info("resumed from " + reader.dir() + " (saved with layout " + reader.meta().layout + ") at step " +
                 std::to_string(reader.meta().step));
    return reader.meta();
}

} // namespace parallax
