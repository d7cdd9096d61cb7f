#pragma once

#include "trainer/comm/ProcessGroups.h"
#include "trainer/models/Model.h"
#include "trainer/models/PublishedWeights.h"
#include "trainer/parallel/GradBuckets.h"
#include "trainer/parallel/GradientReducer.h"
#include "trainer/parallel/TensorParallel.h"
#include "trainer/train/AdamW.h"
#include "trainer/train/Checkpoint.h"
#include "trainer/train/TelemetryEmitter.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace parallax {

// Where this rank's parameters and optimizer state sit in a checkpoint, which stores every tensor
// by its single-device name and full shape whatever layout wrote it: so a run resumes under any
// other layout. Each value is written once: tensor-parallel shards by their rank, replicated
// parameters by tensor-parallel rank 0; data-parallel replicas share the writing, by parameter
// (index % dp) where every replica holds everything, by their own slices under ZeRO. Only what trains
// is written (with a LoRA run, the adapters and their optimizer state).
class CheckpointMapping {
public:
    CheckpointMapping(Model& model, const GradBuckets& buckets, GradientReducer& reducer, AdamW& optimizer,
                      const TensorParallelPlan& tpPlan, const ProcessGroups& groups)
        : m_model(model), m_buckets(buckets), m_reducer(reducer), m_optimizer(optimizer), m_tpPlan(tpPlan),
          m_groups(groups) {}

    // What this rank writes (views of the live tensors).
    std::vector<CheckpointPiece> pieces() const;
    // Loads every parameter this rank trains, and the optimizer state where the checkpoint has it,
    // onto `device` (the optimizer's step count is the caller's); frozen parameters where the
    // checkpoint holds them (else they stay as the run built them). CheckpointError when the
    // checkpoint lacks a parameter this run trains or holds it in another shape (another [finetune]).
    void load(const CheckpointReader& reader, torch::Device device);
    // Sets every parameter this rank holds from `source` (a model folder), reading only this rank's
    // part of each tensor: its tensor-parallel slab, and under ZeRO-3 its range of the trained ones.
    // Parameters the source lacks (LoRA adapters, added to the model after it) keep their values.
    void loadWeights(const WeightSource& source);
    // The run's frozen parameters were drawn from `seed` (no model folder): a checkpoint that does not
    // hold them must come from a run of the same seed.
    void setBaseSeed(uint64_t seed) { m_baseSeed = seed; }

    // Every rank: writes the checkpoint `meta` describes into `dir` (the optimizer's step count
    // filled in), rank 0 reporting it to `out`; returns its folder. Where it cannot be written, an
    // AgreedFailure (every rank has the same message) saying what a resume would start from
    // (`resumedFrom`: where this run itself resumed from).
    std::string save(const std::string& dir, CheckpointMeta meta, TelemetryEmitter& out,
                     const std::string& resumedFrom);
    // Every rank: loads the checkpoint at `from` (a folder or a checkpoints folder) and the
    // optimizer's step count; rank 0 logs the reader's warnings and where it resumed. Returns the
    // checkpoint's meta (its step is the next one to run).
    CheckpointMeta resume(const std::string& from, const ModelDims& dims, torch::Device device, TelemetryEmitter& out);

private:
    CheckpointPiece pieceOf(const std::string& name, const std::string& role, const torch::Tensor& local,
                            const std::vector<int64_t>& localShape) const;
    // This rank's part of a full tensor: its tensor-parallel shard, or the whole.
    torch::Tensor localPart(const std::string& name, const torch::Tensor& full) const;
    void requireTrainable(const CheckpointReader& reader, const ParamSlot& slot) const;
    void loadFrozen(const CheckpointReader& reader, torch::Device device);

    Model& m_model;
    const GradBuckets& m_buckets;
    GradientReducer& m_reducer;
    AdamW& m_optimizer;
    const TensorParallelPlan& m_tpPlan;
    const ProcessGroups& m_groups;
    std::optional<uint64_t> m_baseSeed;
};

} // namespace parallax
