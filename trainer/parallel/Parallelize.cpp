#include "trainer/parallel/Parallelize.h"

#include "core/spec/Estimates.h"
#include "core/spec/ScheduleInfo.h"
#include "trainer/models/Embedding.h"
#include "trainer/models/Linear.h"
#include "trainer/models/TransformerBlock.h"
#include "trainer/parallel/AbsentUnit.h"
#include "trainer/parallel/ActivationCheckpoint.h"
#include "trainer/parallel/DataParallel.h"
#include "trainer/parallel/FrozenWeights.h"
#include "trainer/parallel/Zero3.h"

#include <map>
#include <stdexcept>
#include <string>
#include <set>
#include <stdexcept>
#include <string>

namespace parallax {

namespace {

// This rank's pipeline chunks; the model's other units become placeholders.
std::vector<StageChunk> placeStages(Model& model, const RunSpec& spec, const ModelDims& dims,
                                    const ProcessGroups& groups) {
    const int pp = groups.ppSize;
    const int chunks = static_cast<int>(modelChunks(spec.parallel.schedule, spec.parallel.virtual_stages));
    const std::vector<int> bounds = pipelineUnitBounds(spec, dims);
    if (bounds.back() != static_cast<int>(model.unitCount()))
        throw std::logic_error("the estimates count " + std::to_string(bounds.back()) + " units, the model has " +
                               std::to_string(model.unitCount()));
    std::vector<bool> local(static_cast<size_t>(model.unitCount()), false);
    std::vector<StageChunk> mine;
    for (int c = 0; c < chunks; ++c) {
        const int piece = c * pp + groups.coord.pp;
        StageChunk chunk;
        chunk.virtualStage = piece;
        for (int u = bounds[static_cast<size_t>(piece)]; u < bounds[static_cast<size_t>(piece) + 1]; ++u) {
            chunk.units.push_back(model.unit(u));
            chunk.indices.push_back(u);
            local[static_cast<size_t>(u)] = true;
        }
        deferResidualsWithin(chunk.units);
        mine.push_back(std::move(chunk));
    }
    for (size_t u = 0; u < local.size(); ++u) {
        if (local[u]) continue;
        model.replaceUnit(static_cast<int64_t>(u),
                          std::make_shared<AbsentUnit>(model.unit(static_cast<int64_t>(u))->kindName()));
    }
    return mine;
}

// Hands each chunk's Linear layers one queue for the weight gradients its backward leaves to the
// W passes. Before any wrapper (checkpointing, ZeRO-3) hides the layers inside the units.
void deferWeightGrads(std::vector<StageChunk>& chunks) {
    for (StageChunk& chunk : chunks) {
        chunk.weightGrads = std::make_shared<WeightGradQueue>();
        for (const auto& unit : chunk.units)
            for (const auto& module : unit->modules(/*include_self=*/false))
                if (auto* linear = dynamic_cast<Linear*>(module.get())) linear->weight_grad_deferral = chunk.weightGrads;
    }
}

// Under bf16 autocast on a GPU the Linear products read bf16 weights: copies (ProductCopies, ZeRO-3's
// gathers) of trained ones, and frozen ones held in bf16 (moveToDevice).
bool bf16Products(const RunSpec& spec, torch::Device device) {
    return device.is_cuda() && spec.train.precision == Precision::Bf16;
}

std::unique_ptr<GradientReducer> zero3(Model& model, const RunSpec& spec, GradBuckets& buckets,
                                       std::vector<StageChunk>& chunks, const ProcessGroups& groups,
                                       torch::Device device, torch::ScalarType reduceType) {
    auto z = std::make_unique<Zero3>(buckets, groups.dp, reduceType);
    z->wrapUnits(chunks);
    // Parameters backward does not read are gathered for forward only: lookup tables always, and
    // under bf16 autocast Linear weights, which reach their products as bf16 copies (gathered as such).
    // Not with activation checkpointing, whose recomputation reads them.
    if (spec.train.activation_checkpointing) return z;
    std::set<std::string> forwardOnly;
    std::map<std::string, Linear*> products;
    for (const auto& item : model.named_modules()) {
        if (dynamic_cast<const Embedding*>(item.value().get())) forwardOnly.insert(item.key() + ".weight");
        auto* linear = dynamic_cast<Linear*>(item.value().get());
        if (bf16Products(spec, device) && linear) {
            forwardOnly.insert(item.key() + ".weight");
            products[item.key() + ".weight"] = linear;
        }
    }
    z->setForwardOnlyParameters(forwardOnly);
    if (!products.empty()) z->useProductCopies(torch::kBFloat16, products);
    return z;
}

} // namespace

ParallelModel parallelize(Model& model, const RunSpec& spec, const ModelDims& dims, ProcessGroups& groups,
                          torch::Device device) {
    ParallelModel out;
    const std::set<std::string> tied = TiedParameters::trained(model); // on the whole model
    const std::set<std::string> withoutGradient = parametersWithoutGradient(model);
    out.chunks = placeStages(model, spec, dims, groups);
    const bool splitBackward = splitsBackward(spec.parallel.schedule.value(), groups.ppSize);
    if (splitBackward) deferWeightGrads(out.chunks);
    // Keys and values split by whole heads, so tp must divide the key/value heads.
    if (groups.tp && dims.kv_heads > 0 && dims.kv_heads % groups.tp->size() != 0)
        throw std::invalid_argument("parallel.tp = " + std::to_string(groups.tp->size()) +
                                    " does not divide the model's " + std::to_string(dims.kv_heads) +
                                    " key/value heads (kv_heads); use a tp that divides it");
    out.tpPlan = applyTensorParallel(model, groups.tp);
    out.frozenInProductType = moveToDevice(
        model, device, bf16Products(spec, device) ? std::optional<torch::ScalarType>(torch::kBFloat16) : std::nullopt);
    if (spec.train.activation_checkpointing) checkpointBlocks(out.chunks, spec.train.recompute_blocks);

    std::vector<std::pair<std::string, torch::Tensor>> named;
    for (const auto& item : model.named_parameters()) named.emplace_back(item.key(), item.value());
    const int zero = static_cast<int>(spec.parallel.zero);
    BucketOptions options;
    options.bucketBytes = spec.parallel.bucket_mb * 1024.0 * 1024.0;
    for (const auto& [name, shard] : out.tpPlan) options.sharded.insert(name);
    options.padMultiple = zero > 0 ? groups.dpSize : 1;
    options.perUnit = zero == 3;
    options.alone = tied;
    options.withoutGradient = withoutGradient;
    out.buckets = std::make_unique<GradBuckets>(named, options);
    auto ties = std::make_unique<TiedParameters>(model.ties(), tied, *out.buckets, groups);
    if (!ties->empty()) out.ties = std::move(ties);
    // Gradients cross the wire in parallel.reduce_dtype (the validator allows bf16 only with NCCL).
    const torch::ScalarType reduceType = spec.parallel.reduce_dtype == Precision::Bf16 ? torch::kBFloat16 : torch::kFloat;
    if (zero == 3) {
        // Its reductions follow each unit's backward, before the W passes (the validator refuses).
        if (splitBackward)
            throw std::invalid_argument("parallel.zero = 3 cannot be used with parallel.schedule = \"zb1\"; use "
                                        "parallel.zero = 2 or less");
        out.reducer = zero3(model, spec, *out.buckets, out.chunks, groups, device, reduceType);
        return out;
    }
    auto dp = std::make_unique<DataParallel>(*out.buckets, groups.dp, zero, reduceType);
    // The accumulators' hooks fire in the backward, before the W passes add the Linear weights'
    // gradients: a bucket counted complete there is not.
    if (splitBackward) dp->reduceAtFinishOnly();
    // Under bf16 autocast the products read bf16 copies made once per update, not cast per layer.
    if (bf16Products(spec, device))
        dp->useProductCopies(std::make_unique<ProductCopies>(*out.buckets, torch::kBFloat16, linearLayers(model)));
    out.reducer = std::move(dp);
    return out;
}

} // namespace parallax
