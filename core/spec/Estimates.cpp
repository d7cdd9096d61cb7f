#include "core/spec/Estimates.h"

#include "core/spec/CheckedMath.h"
#include "core/spec/FinetunePlan.h"
#include "core/spec/ModelKinds.h"
#include "core/spec/ScheduleInfo.h"
#include "core/spec/SpecLimits.h"
#include "core/spec/StagePartition.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <stdexcept>

namespace parallax {

// Parameters and FLOPs follow docs/models.md unit by unit. Memory per device is an estimate built
// from the same units:
//
//   weights     = P_local * (4 bytes fp32 | 4 fp32 master + 2 bf16 copy under bf16)  / dp if zero = 3
//   gradients   = T_local * 4 bytes (fp32, accumulated over micro-batches)            / dp if zero >= 2
//   optimizer   = T_local * 8 bytes (AdamW's two fp32 moments)                         / dp if zero >= 1
//   P_local = split / tp + replicated (of the stage's units); T_local the same for trainable ones.
//
// Tensor parallelism splits q, k, v, fc1 (weight and bias), proj and fc2 (weight), the token
// embedding and the output head (vocabulary); norms, positions, the biases of proj/fc2 and
// everything outside the transformer blocks of qwen_image (modulation, timestep MLP, patch
// embedding) are replicated.
//
// Activations saved for backward per sample, in elements (e = 4 bytes fp32, 2 bf16), counted
// the way Korthikanti et al. ("Reducing Activation Recomputation in Large Transformer Models")
// count them, for this architecture, which has no dropout. A pre-norm block over S tokens of
// width C with FFN width F and H heads keeps:
//   replicated: ln1 input, ln1 output, ln2 input, ln2 output       4 S C
//   split by tp: q, k, v, attention output, GELU input and output  S (4 C + 2 F)
//                attention probabilities                          H S^2
// i.e. S C (8 + 2 F / C) + H S^2. For F = 4 C at 2 bytes per element that is 32 S C + 2 H S^2
// bytes: Megatron's S C (34 + 5 H S / C) less what its dropout layers keep (2 S C + 3 H S^2).
// qwen_image's blocks also keep both streams' modulated inputs and gated outputs (8 S C replicated)
// and the q/k RMSNorms' intermediates (core/spec/QwenImageModels.cpp).
// The head keeps its norm input and output and the logits (split); the loss's backward holds one or
// two more arrays of the logits' size (KernelPaths). On a GPU attention is fused and keeps no
// probabilities: the H S^2 term is dropped there.
// With activation checkpointing only each unit's input is kept, and one unit's activations are
// recomputed at a time during backward; with train.recompute_blocks = N only each stage's first N
// blocks that train keep just their input, the other units all their activations.
//
// Micro-batches in flight on stage s of p with m micro-batches per step: 1 without a pipeline,
// m for gpipe, min(m, p - s) for 1f1b, and for interleaved (Megatron's schedule) up to
// 2 (p - s - 1) + (v - 1) p + 1 model chunks of 1/v of the stage each; for zb1 min(m, p) on every
// stage (forwards in flight and micro-batches whose weight gradients wait, trainer/parallel/
// PipelineSchedule.h), each counted with its whole activations even under checkpointing.
//
// Buffers: two gradient buckets of parallel.bucket_mb MiB with dp > 1 (at most the stage's
// gradients); under ZeRO-3 the gathered weights of two units (current + prefetch) and one unit's
// full gradients; with a pipeline one activation sent and one received.

namespace {

using Unit = UnitEstimate;

// Every dimension of the kind at least 1 and within its limit, so that the units below can be
// built (a block count of 10^18 would never finish) and counted in 64 bits.
void requireUsableDims(const ModelDims& d) {
    for (const auto& [field, value] : modelDimensionFields(d)) {
        const std::string problem = countProblem(field, value, 1);
        if (!problem.empty()) throw std::invalid_argument(problem);
    }
}

std::vector<Unit> buildUnits(const ModelDims& d) {
    requireUsableDims(d);
    return modelKindInfo(d.kind).units(d);
}

// The units with the run's [finetune] applied (published kinds: FinetunePlan.h), and the tied
// copies among the kind's tensors (ModelTensor::tiedCopy): a second place for one weight, which
// the memory figures hold and the model's size does not count; their elements, and those that train.
struct FinetunedUnits {
    std::vector<Unit> units;
    int64_t tiedHeld = 0, tiedTrained = 0;
};

FinetunedUnits buildUnits(const ModelDims& d, const FinetuneSpec& finetune) {
    FinetunedUnits out{buildUnits(d)};
    const ModelKindInfo& kind = modelKindInfo(d.kind);
    if (!publishedModel(kind)) return out;
    const std::vector<ModelTensor> tensors = kind.tensors(d);
    applyFinetune(out.units, tensors, finetune);
    const std::vector<TensorTraining> plan = planFinetune(tensors, finetune);
    for (size_t i = 0; i < tensors.size(); ++i) {
        if (!tensors[i].tiedCopy()) continue;
        out.tiedHeld += tensors[i].elements();
        if (plan[i].trains || plan[i].saved) out.tiedTrained += tensors[i].elements();
    }
    return out;
}

// A unit's parameters that receive gradients: its own not frozen, and the adapters beside them.
int64_t trainableSplit(const Unit& u) { return (u.frozen ? 0 : u.split - u.frozenSplit) + u.adapterSplit; }
int64_t trainableReplicated(const Unit& u) {
    return (u.frozen ? 0 : u.replicated - u.frozenReplicated) + u.adapterReplicated;
}

// The parameters of the units (only the trainable ones, adapters included), in 64 bits.
int64_t unitParameters(const std::vector<Unit>& units, bool trainableOnly) {
    int64_t total = 0;
    for (const Unit& u : units) {
        const std::optional<int64_t> trainable = checkedAdd(trainableSplit(u), trainableReplicated(u));
        const std::optional<int64_t> sum = trainable ? checkedAdd(total, trainableOnly ? *trainable : u.params())
                                                     : std::nullopt;
        if (!sum)
            throw std::invalid_argument("model: the parameter count does not fit in 64 bits; use smaller model "
                                        "dimensions");
        total = *sum;
    }
    return total;
}

struct StageLoad {
    double split = 0, replicated = 0;                   // parameters kept with a master copy
    double frozenSplit = 0, frozenReplicated = 0;       // [finetune]'s frozen ones: the compute copy only
    double trainableSplit = 0, trainableReplicated = 0; // adapters included
    double activations = 0;                             // per sample, elements, tp applied
    double kept = 0;          // what backward keeps under activation checkpointing, per sample
    int64_t recomputed = 0;   // blocks train.recompute_blocks has counted so far
    double largestUnitPeak = 0;                         // a unit's activations and its backward's arrays
    double largestWork = 0;                             // the loss's backward arrays (KernelPaths)
    double largestUnitParams = 0;                       // tp applied
    double boundary = 0;                                // largest unit input, elements per sample
};

int64_t microBatchesPerStep(const RunSpec& spec) {
    const int64_t m = spec.accumulation();
    if (m > 0) return m;
    // Not a whole number: the micro-batches a step would need, rounded up.
    const int64_t per = std::max<int64_t>(1, saturatingMul(spec.parallel.dp, spec.train.micro_batch));
    const int64_t batch = std::max<int64_t>(1, spec.train.global_batch);
    return batch / per + (batch % per != 0 ? 1 : 0);
}

// The layout fields the estimate divides or sizes by, within their limits.
void requireUsableLayout(const RunSpec& spec) {
    for (const auto& [field, value] : {std::pair<const char*, int64_t>{"parallel.dp", spec.parallel.dp},
                                       {"parallel.tp", spec.parallel.tp},
                                       {"parallel.pp", spec.parallel.pp},
                                       {"parallel.virtual_stages", spec.parallel.virtual_stages}}) {
        const FieldLimit* limit = fieldLimit(field);
        if (limit && value > limit->most) throw std::invalid_argument(countProblem(field, value, 1));
    }
}

} // namespace

int64_t parameterCount(const ModelDims& dims) {
    const FinetunedUnits built = buildUnits(dims, FinetuneSpec());
    return unitParameters(built.units, false) - built.tiedHeld;
}

double forwardFlopsPerSample(const ModelDims& d) {
    double flops = 0;
    for (const Unit& u : buildUnits(d)) flops += u.flops;
    return flops;
}

namespace {

// Each unit's forward; the backward through it once anything at or before it trains (its input
// gradients, as much again as its forward); and its weight gradients for the share of its own
// parameters that train (as much again for a unit that trains whole: 3 x forward in all).
double trainingFlops(const std::vector<Unit>& units) {
    double flops = 0;
    bool backward = false;
    for (const Unit& u : units) {
        const double own = double(u.params());
        const double trainsOwn = u.frozen ? 0.0 : own - double(u.frozenSplit + u.frozenReplicated);
        backward = backward || trainsOwn > 0 || u.adapterSplit + u.adapterReplicated > 0;
        flops += u.flops * (1.0 + (backward ? 1.0 : 0.0) + (own > 0 ? trainsOwn / own : 0.0));
    }
    return flops;
}

} // namespace

double trainingFlopsPerSample(const ModelDims& d, const FinetuneSpec& finetune) {
    return trainingFlops(buildUnits(d, finetune).units);
}

double trainingFlopsPerLatentSample(const ModelDims& d, const FinetuneSpec& finetune, int64_t textTokens,
                                    int64_t imageTokens) {
    ModelDims shaped = d;
    shaped.seq_len = std::max<int64_t>(1, textTokens);
    shaped.shape_image_tokens = std::max<int64_t>(1, imageTokens);
    return trainingFlopsPerSample(shaped, finetune);
}

double pipelineBubble(int64_t stages, int64_t microbatches, Schedule schedule, int64_t virtualStages) {
    if (stages <= 1) return 0.0;
    const double p = double(stages);
    const double m = double(std::max<int64_t>(1, microbatches));
    // With unit passes (T_F = T_B = T_W = 1) a stage computes 3m units; 1F1B's bubble is p - 1
    // forward-plus-backward rounds, 3 (p - 1) units, and ZB-H1 fills two of its three with the
    // weight-gradient passes, leaving p - 1 units. Both as the idle share of the step's window, as
    // PipelineBubbles measures it.
    const double work = double(scheduleInfo(schedule).fill) * double(modelChunks(schedule, virtualStages)) * m;
    return (p - 1) / (work + p - 1);
}

int64_t pipelineBlocks(const ModelDims& dims) {
    if (reconstructsImages(modelKindInfo(dims.kind))) return 0; // one unit (the VAE), no blocks to divide
    return saturatingAdd(dims.layers, modelKindInfo(dims.kind).vision_tower ? dims.vision_layers : 0);
}

std::vector<int> pipelineUnitBounds(const RunSpec& spec, const ModelDims& dims) {
    const int64_t pp = std::max<int64_t>(1, spec.parallel.pp);
    const bool interleaved = runsModelChunks(spec.parallel.schedule, spec.parallel.virtual_stages);
    const int64_t pieces = saturatingMul(pp, modelChunks(spec.parallel.schedule, spec.parallel.virtual_stages));
    std::vector<UnitInfo> info;
    for (const Unit& u : buildUnits(dims)) info.push_back({u.block, u.flops});
    // More pieces than units can never be placed (and would not fit partitionUnits' int).
    if (pieces > static_cast<int64_t>(info.size()))
        throw std::invalid_argument("the model has " + std::to_string(pipelineBlocks(dims)) + " transformer blocks for " +
                                    std::to_string(pieces) +
                                    " pipeline pieces (parallel.pp x parallel.virtual_stages); use fewer stages or "
                                    "more model.layers");
    return partitionUnits(info, static_cast<int>(pieces), interleaved ? std::vector<int64_t>{} : spec.parallel.stage_layers);
}

std::vector<int64_t> pipelinePieces(const RunSpec& spec, const ModelDims& dims) {
    const std::vector<Unit> units = buildUnits(dims);
    const std::vector<int> bounds = pipelineUnitBounds(spec, dims);
    std::vector<int64_t> blocks;
    for (size_t piece = 0; piece + 1 < bounds.size(); ++piece) {
        int64_t n = 0;
        for (int u = bounds[piece]; u < bounds[piece + 1]; ++u) n += units[static_cast<size_t>(u)].block ? 1 : 0;
        blocks.push_back(n);
    }
    return blocks;
}

namespace {

// What the worker's kernels hold, by device. On a GPU attention is fused (scaled_dot_product_attention
// keeps no probabilities) and so is the loss (trainer/ops/CrossEntropy: it keeps the logits, and its
// backward makes their gradient, one array of their size). On a CPU attention keeps its probabilities,
// and the loss keeps the log-probabilities, its backward making their gradient and the logits' (two).
struct KernelPaths {
    bool fusedAttention;
    double lossArrays;
};

// A CPU rank's resident memory before it holds a model: LibTorch 1.13 (Debian's, with OpenBLAS),
// Open MPI and the worker, measured as the whole peak of a run of the tiny qwen2_5_vl preset
// (`bench_memory --kind qwen2_5_vl`: 189 MiB; qwen_image's tiny preset: 186 MiB). The heap's holes
// beside it: a step frees and allocates the loss's arrays of the logits' size, and a freed block
// the next one does not fit stays resident (the heap keeps it); the 0.5B benches measured from
// about one to three such arrays above the live peak (heaptrack's peak heap against the resident
// peak), counted here as the loss's backward arrays once more.
constexpr double kCpuRuntimeBytes = 189.0 * 1024 * 1024;

KernelPaths kernelPaths(const RunSpec& spec) {
    const bool gpu = spec.launch.device == Device::Cuda;
    return {gpu, gpu ? 1.0 : 2.0};
}

// The layout numbers a stage's memory depends on.
struct StageLayout {
    int64_t pp, tp, dp, zero, chunks, m;
    Schedule schedule;  // an unknown one counts as 1F1B
    bool splitBackward; // weight-gradient passes of their own (zb1), with a pipeline
    KernelPaths kernels;
};

StageLayout stageLayout(const RunSpec& spec) {
    const ScheduleInfo* info = scheduleInfo(spec.parallel.schedule);
    const int64_t pp = std::max<int64_t>(1, spec.parallel.pp);
    return {pp,
            std::max<int64_t>(1, spec.parallel.tp),
            std::max<int64_t>(1, spec.parallel.dp),
            std::clamp<int64_t>(spec.parallel.zero, 0, 3),
            modelChunks(spec.parallel.schedule, spec.parallel.virtual_stages),
            microBatchesPerStep(spec),
            info ? info->schedule : Schedule::OneFOneB,
            info && info->splitBackward && pp > 1,
            kernelPaths(spec)};
}

// What each pipeline stage holds: units to stages exactly as the trainer places them
// (pipelineUnitBounds); a layout the validator refuses falls back to everything on stage 0, the only
// stage estimated then.
std::vector<StageLoad> stageLoads(const RunSpec& spec, const ModelDims& d, const std::vector<Unit>& units,
                                  const StageLayout& l) {
    std::vector<int> bounds;
    try {
        bounds = pipelineUnitBounds(spec, d);
    } catch (const std::invalid_argument&) {
        bounds = {0, static_cast<int>(units.size())};
    }
    const int64_t pieces = static_cast<int64_t>(bounds.size()) - 1;
    const int64_t stages = std::min(l.pp, pieces);
    std::vector<StageLoad> loads(static_cast<size_t>(stages));
    size_t piece = 0;
    // A published model's units before the first one that trains keep nothing for backward: no
    // gradient flows back to them (a frozen vision tower runs as inference).
    bool gradientFlows = !publishedModel(modelKindInfo(d.kind));
    for (size_t index = 0; index < units.size(); ++index) {
        const Unit& u = units[index];
        while (piece + 2 < bounds.size() && static_cast<int>(index) >= bounds[piece + 1]) ++piece;
        StageLoad& s = loads[static_cast<size_t>(static_cast<int64_t>(piece) % stages)];
        s.split += double(u.split + u.adapterSplit - u.frozenSplit);
        s.replicated += double(u.replicated + u.adapterReplicated - u.frozenReplicated);
        s.frozenSplit += double(u.frozenSplit);
        s.frozenReplicated += double(u.frozenReplicated);
        s.trainableSplit += double(trainableSplit(u));
        s.trainableReplicated += double(trainableReplicated(u));
        s.largestUnitParams = std::max(s.largestUnitParams, double(u.split) / double(l.tp) + double(u.replicated));
        s.boundary = std::max(s.boundary, u.input);
        gradientFlows = gradientFlows || trainableSplit(u) + trainableReplicated(u) > 0;
        if (!gradientFlows) continue;
        const double scores = l.kernels.fusedAttention ? u.scoresReplicated + u.scoresSplit / double(l.tp) : 0.0;
        const double acts = u.actReplicated + u.actSplit / double(l.tp) - scores;
        const double work = u.logits / double(l.tp) * l.kernels.lossArrays;
        s.activations += acts;
        // train.recompute_blocks > 0: the stage's first blocks that train are recomputed, as
        // checkpointBlocks wraps them; every other unit keeps its activations.
        const int64_t limit = spec.train.recompute_blocks;
        const bool recomputed =
            limit <= 0 || (u.block && trainableSplit(u) + trainableReplicated(u) > 0 && s.recomputed < limit);
        if (limit > 0 && recomputed) ++s.recomputed;
        s.kept += recomputed ? u.input : acts;
        s.largestUnitPeak = std::max(s.largestUnitPeak, acts + work);
        s.largestWork = std::max(s.largestWork, work);
    }
    return loads;
}

// The micro-batches whose activations pipeline stage `stage` holds at once, by schedule (in doubles:
// m can be as large as train.global_batch).
double inFlightMicroBatches(const StageLayout& l, int64_t stage) {
    if (l.pp <= 1) return 1;
    const double md = double(l.m), ppd = double(l.pp), vd = double(l.chunks);
    const double later = ppd - double(stage); // this stage and the ones after it
    if (scheduleInfo(l.schedule).forwardsFirst) return md;
    if (l.chunks > 1) return std::min(md * vd, 2 * (later - 1) + (vd - 1) * ppd + 1) / vd;
    // Forwards in flight as 1f1b, plus micro-batches whose weight gradients wait: zb1 holds at most p
    // of both together on every stage.
    if (l.splitBackward) return std::min(md, ppd);
    return std::min(md, later);
}

MemoryEstimate stageMemory(const RunSpec& spec, const StageLayout& l, const StageLoad& s, int64_t stage) {
    const bool bf16 = spec.train.precision == Precision::Bf16;
    const double weightBytes = bf16 ? 6.0 : 4.0;  // fp32 master (+ bf16 copy)
    const double computeBytes = bf16 ? 2.0 : 4.0; // activations, gathered weights
    const double microBatch = double(std::max<int64_t>(1, spec.train.micro_batch));
    const bool checkpointing = spec.train.activation_checkpointing;
    const double tp = double(l.tp), dp = double(l.dp);
    MemoryEstimate mem;
    const double local = s.split / tp + s.replicated;
    const double localFrozen = s.frozenSplit / tp + s.frozenReplicated;
    const double localTrainable = s.trainableSplit / tp + s.trainableReplicated;
    mem.weights = (local * weightBytes + localFrozen * computeBytes) / (l.zero >= 3 ? dp : 1.0);
    mem.gradients = localTrainable * 4.0 / (l.zero >= 2 ? dp : 1.0);
    mem.optimizer = localTrainable * 8.0 / (l.zero >= 1 ? dp : 1.0);

    // A micro-batch whose weight gradients wait (zb1) keeps its Linear layers' inputs and output
    // gradients, about its whole activations, recomputed ones too: checkpointing saves nothing there.
    const double kept = checkpointing && !l.splitBackward ? s.kept : s.activations;
    mem.activations = kept * microBatch * computeBytes * inFlightMicroBatches(l, stage);
    // Beside what is kept: the unit whose activations and backward arrays are largest (recomputed
    // under checkpointing), or the loss's backward arrays.
    const double transient = checkpointing ? s.largestUnitPeak : s.largestWork;
    mem.activations += transient * microBatch * computeBytes;

    // Buckets never hold more than the gradients they carry.
    if (l.dp > 1) mem.buffers += std::min(2.0 * spec.parallel.bucket_mb * 1024.0 * 1024.0, localTrainable * 4.0);
    if (l.dp > 1 && l.zero >= 3) mem.buffers += s.largestUnitParams * (2.0 * computeBytes + 4.0);
    if (l.pp > 1) mem.buffers += 2.0 * s.boundary * microBatch * computeBytes;
    if (spec.launch.device != Device::Cuda) mem.runtime = kCpuRuntimeBytes + s.largestWork * microBatch * computeBytes;
    return mem;
}

} // namespace

Estimates estimate(const RunSpec& spec) {
    const ModelDims d = resolveModel(spec);
    requireUsableLayout(spec);
    const FinetunedUnits built = buildUnits(d, spec.finetune);
    const std::vector<Unit>& units = built.units;

    Estimates e;
    e.params = unitParameters(units, false) - built.tiedHeld;
    e.trainable_params = unitParameters(units, true) - built.tiedTrained;
    for (const Unit& u : units)
        e.adapter_params = saturatingAdd(e.adapter_params, saturatingAdd(u.adapterSplit, u.adapterReplicated));
    const double tokens = double(d.tokensPerSample());
    e.flops_per_sample = trainingFlops(units);
    e.flops_per_token = tokens > 0 ? e.flops_per_sample / tokens : 0;
    e.tokens_per_step = saturatingMul(std::max<int64_t>(0, spec.train.global_batch), d.tokensPerSample());

    const StageLayout l = stageLayout(spec);
    e.bubble = pipelineBubble(l.pp, l.m, l.schedule, l.chunks);
    const std::vector<StageLoad> loads = stageLoads(spec, d, units, l);
    for (size_t stage = 0; stage < loads.size(); ++stage)
        e.memory_per_stage.push_back(stageMemory(spec, l, loads[stage], static_cast<int64_t>(stage)));
    e.memory = *std::max_element(e.memory_per_stage.begin(), e.memory_per_stage.end(),
                                 [](const MemoryEstimate& a, const MemoryEstimate& b) { return a.total() < b.total(); });
    return e;
}

std::string formatCount(double n) {
    const char* suffixes[] = {"", "K", "M", "B", "T"};
    const int decimals[] = {0, 1, 1, 2, 2};
    const double sign = n < 0 ? -1.0 : 1.0;
    double value = std::fabs(n);
    int unit = 0;
    // Move up a unit when the rounded value would read 1000 or more ("999.96K" -> "1.00M").
    while (unit < 4) {
        const double scale = std::pow(10.0, decimals[unit]);
        if (std::round(value * scale) / scale < 1000.0) break;
        value /= 1000.0;
        ++unit;
    }
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f%s", decimals[unit], sign * value, suffixes[unit]);
    return buf;
}

std::string formatBytes(double bytes) {
    const char* suffixes[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    const double sign = bytes < 0 ? -1.0 : 1.0;
    double value = std::fabs(bytes);
    int unit = 0;
    while (unit < 5 && std::round(value * (unit == 0 ? 1.0 : 10.0)) / (unit == 0 ? 1.0 : 10.0) >= 1024.0) {
        value /= 1024.0;
        ++unit;
    }
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f %s", unit == 0 ? 0 : 1, sign * value, suffixes[unit]);
    return buf;
}

} // namespace parallax
