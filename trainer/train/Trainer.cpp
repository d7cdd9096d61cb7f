#include "trainer/train/Trainer.h"

#include "trainer/comm/FlightRecorder.h"

#include "core/telemetry/ClockSync.h"
#include "core/telemetry/Statistics.h"
#include "core/util/Files.h"
#include "core/util/HostName.h"

#include "trainer/data/Dataset.h"
#include "trainer/data/DistributedSampler.h"
#include "trainer/parallel/AbsentUnit.h"
#include "trainer/parallel/ActivationCheckpoint.h"
#include "trainer/parallel/DataParallel.h"
#include "trainer/parallel/GradBuckets.h"
#include "core/spec/Estimates.h"
#include "trainer/parallel/Zero3.h"
#include "trainer/models/Embedding.h"
#include "trainer/models/Linear.h"
#include "trainer/models/TransformerBlock.h"
#include "trainer/train/AdamW.h"
#include "trainer/train/DevicePeak.h"
#include "trainer/train/DeviceSampler.h"
#include "trainer/train/OptimizerStream.h"
#include "trainer/train/StepClock.h"
#include "trainer/train/StopRequest.h"
#include "trainer/compat/TorchCompat.h"
#if PARALLAX_WITH_CUDA
#include "trainer/train/CudaSpanTimer.h"
#include "trainer/train/CudaStepClock.h"
#include "trainer/train/CudaSupport.h"
#endif

#include <algorithm>
#include <chrono>
#include <optional>
#include <set>
#include <cmath>
#include <sstream>
#include <unistd.h>

namespace parallax {

namespace {

double monotonicSeconds() {
    using namespace std::chrono;
    return duration<double>(steady_clock::now().time_since_epoch()).count();
}

std::string layoutName(const RunSpec& s) {
    std::ostringstream o;
    o << "dp" << s.parallel.dp << ".tp" << s.parallel.tp << ".pp" << s.parallel.pp << ".z" << s.parallel.zero << "."
      << s.parallel.schedule;
    return o.str();
}

// What a run whose checkpoint failed can be resumed from.
std::string resumePoint(const std::string& checkpointsDir, const std::string& resumedFrom) {
    const std::vector<std::string> complete = listCheckpoints(checkpointsDir);
    if (!complete.empty())
        return "the last complete checkpoint is step " + std::to_string(checkpointStep(complete.front())) + " (" +
               complete.front() + ")";
    if (!resumedFrom.empty()) return "no checkpoint of this run is complete; it resumed from " + resumedFrom;
    return "no checkpoint of this run is complete";
}

// Every rank's host name, gathered over `world`.
std::vector<std::string> gatherHosts(Communicator& world) {
    constexpr int64_t kWidth = 256;
    auto mine = torch::zeros({kWidth}, torch::kUInt8);
    const std::string host = hostName();
    std::memcpy(mine.data_ptr(), host.data(), std::min<size_t>(host.size(), kWidth - 1));
    auto all = torch::zeros({kWidth * world.size()}, torch::kUInt8);
    world.allGather(all, mine);
    std::vector<std::string> hosts;
    for (int r = 0; r < world.size(); ++r)
        hosts.emplace_back(reinterpret_cast<const char*>(all.data_ptr<uint8_t>() + r * kWidth));
    return hosts;
}

// Every rank's process id, so that the supervisor can end each one on its host.
std::vector<int64_t> gatherPids(Communicator& world) {
    auto mine = torch::full({1}, static_cast<int64_t>(::getpid()), torch::kLong);
    auto all = torch::zeros({world.size()}, torch::kLong);
    world.allGather(all, mine);
    return std::vector<int64_t>(all.data_ptr<int64_t>(), all.data_ptr<int64_t>() + world.size());
}

// Offsets of every rank's clock from rank 0's (rank clock - rank 0 clock, seconds), from ping-pong
// exchanges with rank 0 (the one of least delay wins). Every rank gets the whole vector.
std::vector<double> alignClocks(Communicator& world) {
    constexpr int kRounds = 8;
    std::vector<ClockSample> samples;
    auto buf = torch::zeros({2}, torch::kDouble);
    for (int r = 1; r < world.size(); ++r) {
        for (int k = 0; k < kRounds; ++k) {
            if (world.rank() == r) {
                ClockSample s;
                s.t0 = TelemetryEmitter::now();
                world.send(buf, 0, 7001);
                world.recv(buf, 0, 7002);
                s.t3 = TelemetryEmitter::now();
                s.t1 = buf[0].item<double>();
                s.t2 = buf[1].item<double>();
                samples.push_back(s);
            } else if (world.rank() == 0) {
                world.recv(buf, r, 7001);
                buf[0] = TelemetryEmitter::now();
                buf[1] = TelemetryEmitter::now();
                world.send(buf, r, 7002);
            }
        }
    }
    const double mine = world.rank() == 0 ? 0.0 : -estimateClockOffset(samples).offset;
    auto all = torch::zeros({world.size()}, torch::kDouble);
    world.allGather(all, torch::full({1}, mine, torch::kDouble));
    return std::vector<double>(all.data_ptr<double>(), all.data_ptr<double>() + world.size());
}

#if PARALLAX_WITH_CUDA
// Spans timed by CUDA events: what the GPU did, not when the host queued it.
class CudaEventSpanTimer : public SpanTimer {
public:
    explicit CudaEventSpanTimer(torch::Device device) : m_device(device), m_timer(device) {}
    size_t begin() override { return m_timer.begin(); }
    void end(size_t span) override { m_timer.end(span); }
    std::vector<std::pair<double, double>> resolve() override {
        synchronize(m_device);
        return m_timer.resolve();
    }
    void clear() override { m_timer.clear(); }

private:
    torch::Device m_device;
    CudaSpanTimer m_timer;
};
#endif

} // namespace

int64_t Trainer::lossElements(const ModelDims& dims, const Batch& batch) {
    if (dims.kind == "gpt") return batch.tokens.size(0) * (batch.tokens.size(1) - 1);
    if (dims.kind == "mmdit") return batch.images.numel();
    return batch.labels.ge(0).sum().item<int64_t>();
}

Trainer::Trainer(RunSpec spec, WorkerOptions options, ProcessGroups& groups, TelemetryEmitter& out)
    : m_spec(std::move(spec)), m_options(std::move(options)), m_groups(groups), m_out(out) {
    if (m_spec.launch.device == "cuda") {
        if (m_options.cudaDevice < 0)
            throw std::invalid_argument("launch.device = \"cuda\" but no GPU was selected for this rank");
        m_device = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(m_options.cudaDevice));
    }
#if PARALLAX_WITH_CUDA
    if (m_device.is_cuda()) {
        m_spanTimer = std::make_unique<CudaEventSpanTimer>(m_device);
        m_stepClock = std::make_unique<CudaStepClock>(m_device);
    }
#endif
    if (!m_spanTimer) m_spanTimer = std::make_unique<WallSpanTimer>();
    if (!m_stepClock) m_stepClock = std::make_unique<HostStepClock>();
}

double Trainer::peakMemoryBytes() {
#if PARALLAX_WITH_CUDA
    if (m_device.is_cuda()) {
        const double peak = static_cast<double>(peakAllocatedBytes(m_device));
        resetPeakAllocated(m_device);
        return peak;
    }
#endif
    return DeviceSampler::residentBytes();
}

Trainer::~Trainer() {
    // Whatever is freed next on the compute stream comes after the last update that reads it.
    if (m_optimizerStream) m_optimizerStream->waitAll();
}

std::vector<StageChunk> Trainer::placeStages() {
    const int pp = m_groups.ppSize;
    const int chunks = m_spec.parallel.schedule == "interleaved" ? static_cast<int>(m_spec.parallel.virtual_stages) : 1;
    // The split the estimates show (same function, same unit costs from docs/models.md).
    const std::vector<int> bounds = pipelineUnitBounds(m_spec, m_dims);
    if (bounds.back() != static_cast<int>(m_model->unitCount()))
        throw std::logic_error("the estimates count " + std::to_string(bounds.back()) + " units, the model has " +
                               std::to_string(m_model->unitCount()));
    std::vector<bool> local(static_cast<size_t>(m_model->unitCount()), false);
    std::vector<StageChunk> mine;
    for (int c = 0; c < chunks; ++c) {
        const int piece = c * pp + m_groups.coord.pp;
        StageChunk chunk;
        chunk.virtualStage = piece;
        for (int u = bounds[static_cast<size_t>(piece)]; u < bounds[static_cast<size_t>(piece) + 1]; ++u) {
            chunk.units.push_back(m_model->unit(u));
            chunk.indices.push_back(u);
            local[static_cast<size_t>(u)] = true;
        }
        deferResidualsWithin(chunk.units);
        mine.push_back(std::move(chunk));
    }
    for (size_t u = 0; u < local.size(); ++u) {
        if (local[u]) continue;
        auto unit = m_model->unit(static_cast<int64_t>(u));
        m_model->replaceUnit(static_cast<int64_t>(u), std::make_shared<AbsentUnit>(unit->kindName(), unit->forwardFlopsPerSample()));
    }
    return mine;
}

void Trainer::setup() {
    m_dims = resolveModel(m_spec.model);
    m_model = buildModel(m_dims, m_spec.train.seed);
    double forward = 0;
    for (const auto& unit : m_model->units()) forward += unit->forwardFlopsPerSample();
    m_flopsPerToken = 3.0 * forward / static_cast<double>(std::max<int64_t>(1, m_dims.tokensPerSample()));

    // Parallelism from the inside out: tensor parallel, activation checkpointing, then data parallel
    // or ZeRO around it.
    std::vector<StageChunk> chunks = placeStages();
    m_tpPlan = applyTensorParallel(*m_model, m_groups.tp);
    m_model->to(m_device);
    if (m_spec.train.activation_checkpointing) checkpointBlocks(chunks);

    std::vector<std::pair<std::string, torch::Tensor>> named;
    for (const auto& item : m_model->named_parameters()) named.emplace_back(item.key(), item.value());
    const int zero = static_cast<int>(m_spec.parallel.zero);
    BucketOptions bucketOptions;
    bucketOptions.bucketBytes = m_spec.parallel.bucket_mb * 1024.0 * 1024.0;
    for (const auto& [name, shard] : m_tpPlan) bucketOptions.sharded.insert(name);
    bucketOptions.padMultiple = zero > 0 ? m_groups.dpSize : 1;
    bucketOptions.perUnit = zero == 3;
    m_buckets = std::make_unique<GradBuckets>(named, bucketOptions);
    // Gradients cross the wire in parallel.reduce_dtype (the validator allows bf16 only with NCCL).
    const torch::ScalarType reduceType = m_spec.parallel.reduce_dtype == "bf16" ? torch::kBFloat16 : torch::kFloat;
    if (zero == 3) {
        auto z = std::make_unique<Zero3>(*m_buckets, m_groups.dp, reduceType);
        z->wrapUnits(chunks);
        // Parameters backward does not read are gathered for forward only: lookup tables always, and
        // under bf16 autocast Linear weights, which reach their products as bf16 copies (gathered as such).
        if (!m_spec.train.activation_checkpointing) {
            const bool bf16Products = m_device.is_cuda() && m_spec.train.precision == "bf16";
            std::set<std::string> forwardOnly, products;
            for (const auto& item : m_model->named_modules()) {
                if (dynamic_cast<const Embedding*>(item.value().get())) forwardOnly.insert(item.key() + ".weight");
                if (bf16Products && dynamic_cast<const Linear*>(item.value().get())) {
                    forwardOnly.insert(item.key() + ".weight");
                    products.insert(item.key() + ".weight");
                }
            }
            z->setForwardOnlyParameters(forwardOnly);
            if (!products.empty()) z->useProductCopies(torch::kBFloat16, products);
        }
        m_zero3 = z.get();
        m_reducer = std::move(z);
    } else {
        m_reducer = std::make_unique<DataParallel>(*m_buckets, m_groups.dp, zero, reduceType);
    }
    m_engine = std::make_unique<PipelineEngine>(std::move(chunks), m_groups, m_spec.parallel.schedule,
                                                static_cast<int>(m_spec.accumulation()));

    AdamWOptions o;
    o.beta1 = m_spec.train.beta1;
    o.beta2 = m_spec.train.beta2;
    o.eps = m_spec.train.eps;
    o.weight_decay = m_spec.train.weight_decay;
    m_optimizer = std::make_unique<AdamW>(o);
    for (size_t b = 0; b < m_buckets->buckets().size(); ++b)
        m_optimizer->addGroup(m_reducer->paramShard(b), m_reducer->gradShard(b), m_buckets->buckets()[b].decay);
    // ZeRO-3: slices updated in forward order, the first units gathered for the next step right after,
    // and on a GPU the update on a stream of its own, overlapping the next step's forward.
    if (m_zero3) {
        m_optimizer->setUpdateOrder(m_zero3->forwardBucketOrder(), [z = m_zero3](size_t b) { z->shardUpdated(b); });
        m_optimizerStream = OptimizerStream::forDevice(m_device);
        if (m_optimizerStream) {
            OptimizerStream* stream = m_optimizerStream.get();
            Zero3::StreamHooks hooks;
            hooks.afterUnitUpdated = [stream](int unit) { stream->unitUpdated(unit); };
            hooks.beforeGather = [stream](int unit) { stream->waitUnit(unit); };
            hooks.beforeGradWrite = [stream] { stream->waitAll(); };
            m_zero3->setStreamHooks(std::move(hooks));
        }
    }

    m_dataset = makeDataset(m_spec.data, m_dims, m_spec.train.seed);
    m_sampler = std::make_unique<DistributedSampler>(m_dataset->size(), m_spec.train.global_batch, m_groups.dpSize,
                                                     m_groups.coord.dp, m_spec.train.micro_batch,
                                                     m_spec.train.seed, m_spec.data.shuffle);

    std::string deviceName;
#if PARALLAX_WITH_CUDA
    if (m_device.is_cuda()) deviceName = cudaDeviceName(m_device.index());
#endif
    const PeakFlops peak = devicePeakFlops(m_device.is_cuda(), deviceName, m_spec.train.precision, torch::get_num_threads());
    m_peakFlops = peak.flops;
    if (m_groups.worldRank() == 0) m_out.info("MFU peak per device: " + peak.basis);
}

CheckpointPiece Trainer::pieceOf(const std::string& name, const std::string& role, const torch::Tensor& local,
                                 const std::vector<int64_t>& localShape) const {
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

torch::Tensor Trainer::localPart(const std::string& name, const torch::Tensor& full) const {
    auto shard = m_tpPlan.find(name);
    if (shard == m_tpPlan.end()) return full;
    return full.narrow(shard->second.dim, shard->second.start, shard->second.length);
}

std::vector<CheckpointPiece> Trainer::checkpointPieces() const {
    // Each value is written once: tensor-parallel shards by their rank, replicated parameters by
    // tensor-parallel rank 0. Data-parallel replicas share the writing: by parameter (index % dp)
    // when every replica holds everything, by their own slices under ZeRO.
    std::vector<CheckpointPiece> pieces;
    const bool writesReplicated = m_groups.coord.tp == 0;
    const bool sliced = m_reducer->optimizerSliced();
    const auto& slots = m_buckets->slots();
    const auto& groups = const_cast<AdamW&>(*m_optimizer).groups();
    for (size_t i = 0; i < slots.size(); ++i) {
        const ParamSlot& s = slots[i];
        if (!s.sharded && !writesReplicated) continue;
        if (!sliced && static_cast<int>(i % static_cast<size_t>(m_groups.dpSize)) != m_groups.coord.dp) continue;
        const size_t b = static_cast<size_t>(s.bucket);
        const int64_t shardBegin = m_reducer->shardOffset(b);
        const int64_t lo = std::max(shardBegin, s.offset);
        const int64_t hi = std::min(shardBegin + m_reducer->shardLength(b), s.offset + s.numel);
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
    // Frozen parameters are not in buckets; the first data-parallel rank writes them.
    if (m_groups.coord.dp == 0) {
        for (const auto& item : m_model->named_parameters()) {
            if (item.value().requires_grad()) continue;
            if (!m_tpPlan.count(item.key()) && !writesReplicated) continue;
            pieces.push_back(pieceOf(item.key(), "param", item.value().detach(), item.value().sizes().vec()));
        }
    }
    return pieces;
}

std::string Trainer::saveCheckpoint(int64_t nextStep) {
    const double start = monotonicSeconds();
    CheckpointMeta meta;
    meta.step = nextStep;
    meta.optimizer_steps = m_optimizer->stepCount();
    meta.layout = layoutName(m_spec);
    meta.seed = m_spec.train.seed;
    meta.dims = m_dims;
    const std::string dir = joinPath(m_options.runDir, "checkpoints");
    // The pieces are read on the compute stream: after the optimizer's stream has written them.
    if (m_optimizerStream) m_optimizerStream->waitAll();
    SavedCheckpoint saved;
    try {
        saved = parallax::saveCheckpoint(dir, meta, checkpointPieces(), *m_groups.world);
    } catch (const CheckpointError& e) {
        // Every rank has the same message (saveCheckpoint agrees on it), so every rank ends the run
        // alike; it gains what a resume would start from.
        throw AgreedFailure(std::string(e.what()) + "; " + resumePoint(dir, m_options.resumeFrom), nextStep);
    }
    const double bytes = m_groups.world->allReduceScalar(static_cast<double>(saved.bytes), ReduceOp::Sum);
    if (m_groups.worldRank() == 0) {
        CheckpointEvent e;
        e.step = nextStep;
        e.path = saved.dir;
        e.bytes = static_cast<int64_t>(bytes);
        e.ms = (monotonicSeconds() - start) * 1e3;
        e.layout = meta.layout;
        e.t = TelemetryEmitter::now();
        m_out.emit(e);
    }
    return saved.dir;
}

void Trainer::resume() {
    if (m_options.resumeFrom.empty()) return;
    CheckpointReader reader(m_options.resumeFrom);
    for (const std::string& w : reader.warnings())
        if (m_groups.worldRank() == 0) m_out.warn(w);
    reader.requireCompatible(m_dims);
    torch::NoGradGuard noGrad;
    auto& groups = m_optimizer->groups();
    auto load = [&](const std::string& name, const std::string& role) {
        return localPart(name, reader.full(name, role)).reshape({-1}).to(m_device);
    };
    for (const ParamSlot& s : m_buckets->slots()) {
        const size_t b = static_cast<size_t>(s.bucket);
        AdamW::Group& g = groups[b];
        // The part of this parameter inside the slice the optimizer holds (all of it without ZeRO).
        const int64_t shardBegin = m_reducer->shardOffset(b);
        const int64_t lo = std::max(shardBegin, s.offset);
        const int64_t hi = std::min(shardBegin + m_reducer->shardLength(b), s.offset + s.numel);
        const torch::Tensor param = load(s.name, "param");
        if (!m_zero3) m_buckets->buckets()[b].params.narrow(0, s.offset, s.numel).copy_(param);
        if (hi <= lo) continue;
        if (m_zero3) g.param.narrow(0, lo - shardBegin, hi - lo).copy_(param.narrow(0, lo - s.offset, hi - lo));
        if (reader.has(s.name, "exp_avg")) {
            g.exp_avg.narrow(0, lo - shardBegin, hi - lo).copy_(load(s.name, "exp_avg").narrow(0, lo - s.offset, hi - lo));
            g.exp_avg_sq.narrow(0, lo - shardBegin, hi - lo)
                .copy_(load(s.name, "exp_avg_sq").narrow(0, lo - s.offset, hi - lo));
        }
    }
    for (const auto& item : m_model->named_parameters())
        if (!item.value().requires_grad()) item.value().copy_(load(item.key(), "param").view_as(item.value()));
    if (m_zero3) m_zero3->refreshProductCopies();
    m_optimizer->setStepCount(reader.meta().optimizer_steps);
    m_startStep = reader.meta().step;
    m_tokensSeen = m_startStep * m_spec.train.global_batch * m_dims.tokensPerSample();
    if (m_groups.worldRank() == 0)
        m_out.info("resumed from " + reader.dir() + " (saved with layout " + reader.meta().layout + ") at step " +
                   std::to_string(m_startStep));
}

void Trainer::emitRunStart() {
    const auto hosts = gatherHosts(*m_groups.world);
    const auto pids = gatherPids(*m_groups.world);
    const auto offsets = alignClocks(*m_groups.world);
    m_clockOffset = offsets.at(static_cast<size_t>(m_groups.worldRank()));
    if (m_groups.worldRank() != 0) return;
    RunStartEvent e;
    e.world = m_groups.world->size();
    e.dp = m_groups.dpSize;
    e.tp = m_groups.tpSize;
    e.pp = m_groups.ppSize;
    e.zero = static_cast<int>(m_spec.parallel.zero);
    e.schedule = m_spec.parallel.schedule;
    int64_t params = 0;
    for (const auto& p : m_model->parameters()) params += p.numel();
    e.params = params;
    e.flops_per_token = m_flopsPerToken;
    e.peak_flops = m_peakFlops;
    e.device = m_device.is_cuda() ? "cuda" : "cpu";
    e.hosts = hosts;
    e.devices.assign(hosts.size(), e.device);
    e.clock_offsets = offsets;
    e.pids = pids;
    if (const char* job = std::getenv("SLURM_JOB_ID")) e.slurm_job = job;
    if (const char* nodes = std::getenv("SLURM_JOB_NODELIST")) e.slurm_nodes = nodes;
    e.start_step = m_startStep;
    e.t = TelemetryEmitter::now();
    m_out.emit(e);
}

Trainer::QueuedStep Trainer::queueStep(int64_t step) {
    QueuedStep queued;
    queued.step = step;
    queued.lr = learningRate(step, m_spec.train.steps, m_spec.train.warmup, m_spec.train.lr, m_spec.train.min_lr);
    m_stepClock->begin();
    const int64_t accumulation = m_spec.accumulation();
    std::vector<Batch> micro;
    micro.reserve(static_cast<size_t>(accumulation));
    int64_t localCount = 0;
    for (int64_t k = 0; k < accumulation; ++k) {
        const Batch batch = m_dataset->makeBatch(m_sampler->microBatch(step, k), step);
        localCount += lossElements(m_dims, batch); // on the host copy: no wait for the device
        micro.push_back(batch.to(m_device));
    }
    const double globalCount = m_groups.dp->allReduceScalar(static_cast<double>(localCount), ReduceOp::Sum);

    if (!m_zero3) m_buckets->zeroGrads();
    m_reducer->beginStep(static_cast<int>(accumulation));
    const bool recordSpans = m_spec.telemetry.span_every > 0 && step % m_spec.telemetry.span_every == 0;
    PipelineEngine::Result r;
    {
        // bf16 compute with fp32 parameters, gradients and optimizer state.
        compat::AutocastScope autocast(c10::DeviceType::CUDA, at::kBFloat16,
                                       m_device.is_cuda() && m_spec.train.precision == "bf16");
        r = m_engine->runStep(micro, globalCount, step, recordSpans ? m_spanTimer.get() : nullptr,
                              [this] { m_reducer->afterMicroBatch(); });
    }
    queued.spans = std::move(r.spans);
    m_stepClock->lap();
    m_reducer->finishStep();
    m_stepClock->lap();

    const auto f64 = torch::TensorOptions().dtype(torch::kDouble).device(m_device);
    // Every gradient value counts once: replicated tensor-parallel parameters on tp rank 0 only, and
    // over the data-parallel group too when each rank holds a slice.
    torch::Tensor normSq = m_reducer->gradNormSquared(m_groups.coord.tp == 0);
    if (!normSq.defined()) normSq = torch::zeros({1}, f64);
    (m_reducer->gradientsSliced() ? m_groups.world : m_groups.mp)->allReduce(normSq, ReduceOp::Sum);
    // With model parallelism the sum waits for every stage's backward: its own part of the step.
    m_stepClock->lap();
    const torch::Tensor norm = normSq.sqrt();
    // Every rank holds the same reduced norm, so every rank skips together; finishStep() stops the run.
    const torch::Tensor nonFinite = torch::isfinite(norm).logical_not().reshape({});
    m_nonFinite = m_nonFinite.defined() ? m_nonFinite.logical_or(nonFinite) : nonFinite;
    torch::Tensor scale; // undefined: no clipping
    if (m_spec.train.grad_clip > 0) {
        const double clip = m_spec.train.grad_clip;
        scale = torch::where(norm > clip, clip / (norm + 1e-6), torch::ones_like(norm)).reshape({});
    }
    // The loss exists on the last pipeline stage; the sums over the data-parallel and pipeline groups
    // bring it to all. The first is issued before the optimizer: ZeRO-3 queues the next step's first
    // gathers on the same communicator during the update, and the sum would wait behind them.
    torch::Tensor loss = m_groups.isLastStage() && r.lossSum.defined() ? r.lossSum.detach().to(f64).reshape({1})
                                                                        : torch::zeros({1}, f64);
    const std::shared_ptr<Work> lossSum = m_groups.dp->allReduceAsync(loss, ReduceOp::Sum);
    queued.optimizerStepsBefore = m_optimizer->stepCount();
    if (m_zero3) m_zero3->prefetchNextForward(step + 1 < m_spec.train.steps);
    if (m_optimizerStream)
        m_optimizerStream->run([&] { m_optimizer->step(queued.lr, scale, m_nonFinite); }, {scale, m_nonFinite});
    else
        m_optimizer->step(queued.lr, scale, m_nonFinite);
    m_reducer->afterOptimizerStep();
    m_stepClock->lap();

    lossSum->wait();
    m_groups.pp->allReduce(loss, ReduceOp::Sum);
    m_stepClock->end(torch::cat({loss / globalCount, normSq}));
    return queued;
}

double Trainer::finishStep(const QueuedStep& queued, TrainResult& result) {
    const StepReading reading = m_stepClock->read();
    const double loss = reading.scalars.at(0);
    m_lastGradNorm = std::sqrt(reading.scalars.at(1));
    if (!std::isfinite(m_lastGradNorm)) {
        // Neither this update nor any queued after it was applied; their counts are taken back.
        m_optimizer->setStepCount(queued.optimizerStepsBefore);
        stopOnNonFiniteGradient(queued.step);
    }
    const int64_t step = queued.step;
    const int64_t warmup = std::min<int64_t>(10, (m_spec.train.steps - m_startStep) / 2);
    if (step >= m_startStep + warmup) {
        m_steadySteps.push_back({step, reading.ms, reading.lapMs});
        if (m_steadySteps.size() > kSteadyStepsKept) m_steadySteps.pop_front();
    }
    const int64_t tokensPerStep = m_spec.train.global_batch * m_dims.tokensPerSample();
    m_tokensSeen += tokensPerStep;
    result.losses.push_back(loss);
    if (m_zero3 && step == m_startStep) {
        const int64_t held = m_zero3->residentParameterValues(), total = m_zero3->totalParameterValues();
        m_out.info("ZeRO-3: this rank holds " + std::to_string(held) + " of " + std::to_string(total) +
                   " parameter values between steps (" + std::to_string(100.0 * double(held) / double(std::max<int64_t>(1, total))) +
                   "%), plus " + std::to_string(m_zero3->prefetchedParameterValues()) +
                   " of the next step's first units gathered ahead");
    }
    if (m_options.recorder && step % m_spec.telemetry.step_every == 0) {
        RankStepEvent e;
        e.rank = m_groups.worldRank();
        e.step = step;
        e.wait_ms = queued.waitMs;
        e.compute_ms = std::max(0.0, queued.hostMs - queued.waitMs);
        e.t = TelemetryEmitter::now();
        m_out.emit(e);
    }
    for (SpanEvent span : queued.spans) {
        span.start -= m_clockOffset;
        span.end -= m_clockOffset;
        m_out.emit(span);
    }

    const double ms = reading.ms;
    const double msMin = m_groups.world->allReduceScalar(ms, ReduceOp::Min);
    const double peakMemory = m_groups.world->allReduceScalar(peakMemoryBytes(), ReduceOp::Max);
    const auto [msMax, slowest] = m_groups.world->maxLoc(ms);
    if (m_groups.worldRank() == 0 && (step % m_spec.telemetry.step_every == 0 || step + 1 == m_spec.train.steps)) {
        StepEvent e;
        e.step = step;
        e.loss = loss;
        e.lr = queued.lr;
        e.grad_norm = m_lastGradNorm;
        e.step_ms = ms;
        e.step_ms_min = msMin;
        e.step_ms_max = msMax;
        e.slowest_rank = slowest;
        const double seconds = msMax / 1e3;
        e.tokens_per_s = seconds > 0 ? tokensPerStep / seconds : 0;
        e.samples_per_s = seconds > 0 ? m_spec.train.global_batch / seconds : 0;
        e.mfu = m_peakFlops > 0 ? m_flopsPerToken * e.tokens_per_s / (m_peakFlops * m_groups.world->size()) : 0;
        e.tokens = m_tokensSeen;
        e.peak_mem = peakMemory;
        e.t = TelemetryEmitter::now();
        m_out.emit(e);
    }
    return loss;
}

void Trainer::stopOnNonFiniteGradient(int64_t step) {
    // The update is not applied: the weights and optimizer state are those after the previous
    // step, which a checkpoint keeps so that nothing trained so far is lost.
    std::string kept, lost;
    try {
        kept = saveCheckpoint(step);
    } catch (const AgreedFailure& e) {
        lost = e.what();
    }
    std::ostringstream message;
    message << "step " << step << ": the gradient norm is " << (std::isnan(m_lastGradNorm) ? "NaN" : "infinite")
            << " (not finite), so this update was not applied. Likely causes: a learning rate too high for "
               "this model (train.lr = "
            << m_spec.train.lr << "; lower it or raise train.warmup) or labels outside the vocabulary. "
            << (lost.empty() ? "The weights before this step are in " + kept + "; resume from it with --resume once fixed."
                             : "The weights before this step could not be kept: " + lost);
    // The norm is reduced over every rank, so every rank is here with this message.
    throw AgreedFailure(message.str(), step);
}

TrainResult Trainer::run() {
    setup();
    resume();
    emitRunStart();
    m_out.info("rank " + std::to_string(m_groups.worldRank()) + " on " + hostName() + ": " +
               (m_device.is_cuda() ? "cuda:" + std::to_string(m_device.index()) : std::string("cpu")) + ", " +
               std::to_string(torch::get_num_threads()) + " thread(s), dp " + std::to_string(m_groups.coord.dp) +
               " tp " + std::to_string(m_groups.coord.tp) + " pp " + std::to_string(m_groups.coord.pp) + ", " +
               m_dataset->describe());

    const int gpu = m_device.is_cuda() ? m_device.index() : -1;
    DeviceSampler sampler(m_out, hostName(), gpu, static_cast<int>(m_spec.telemetry.device_sample_ms));
    m_out.emit(sampler.sample());
    sampler.start();

    TrainResult result;
    result.status = "succeeded";
    int64_t step = m_startStep;
    // Step N+1 is queued before step N is read, so the device goes on while the host reports. The
    // queue drains where the host needs the device idle: the last step, a checkpoint, a profile's
    // end, a stop.
    std::optional<QueuedStep> inFlight;
    for (; step < m_spec.train.steps; ++step) {
        if (step == m_options.profileFirst) startProfile();
        if (m_options.recorder) m_options.recorder->takeWaitSeconds(); // waits before this step are not its own
        const double queueStart = monotonicSeconds();
        QueuedStep queued = queueStep(step);
        queued.hostMs = (monotonicSeconds() - queueStart) * 1e3;
        if (m_options.recorder) queued.waitMs = m_options.recorder->takeWaitSeconds() * 1e3;
        if (inFlight) finishStep(*inFlight, result);
        inFlight = std::move(queued);

        const bool scriptedStop = m_options.stopAfter >= 0 && step + 1 >= m_options.stopAfter;
        const bool stop = m_groups.world->allReduceScalar(StopRequest::requested() || scriptedStop ? 1.0 : 0.0,
                                                          ReduceOp::Max) > 0;
        const int64_t every = m_spec.train.checkpoint_every;
        const bool checkpoint = every > 0 && (step + 1) % every == 0 && step + 1 < m_spec.train.steps;
        const bool profileEnds = step == m_options.profileLast && m_profiling;
        if (stop || checkpoint || profileEnds || step + 1 == m_spec.train.steps) {
            finishStep(*inFlight, result);
            inFlight.reset();
        }
        if (profileEnds) writeProfile();
        if (stop) {
            ++step;
            result.status = "stopped";
            break;
        }
        if (checkpoint) result.checkpoint = saveCheckpoint(step + 1);
    }
    sampler.stop();
    reportStepBreakdown();
    result.steps_done = step;
    result.checkpoint = saveCheckpoint(step);
    return result;
}

void Trainer::reportStepBreakdown() {
    static const char* const kParts[] = {"forward and backward", "waiting for gradient reductions after backward",
                                         "gradient norm and its sum over the stages and shards", "optimizer",
                                         "loss reduction"};
    constexpr size_t kCount = sizeof(kParts) / sizeof(kParts[0]);
    if (m_steadySteps.empty()) return;
    std::vector<double> total;
    std::vector<std::vector<double>> parts(kCount);
    for (const SteadyStep& s : m_steadySteps) {
        if (s.lapMs.size() != kCount) return;
        total.push_back(s.ms);
        for (size_t i = 0; i < kCount; ++i) parts[i].push_back(s.lapMs[i]);
    }
    std::ostringstream line;
    line.setf(std::ios::fixed);
    line.precision(2);
    line << "rank " << m_groups.worldRank() << ", steps " << m_steadySteps.front().step << " to "
         << m_steadySteps.back().step << ", medians of each part of the step ("
         << (m_device.is_cuda() ? "CUDA events on the compute stream" : "host clock") << "): step "
         << medianOf(total).value_or(0) << " ms;";
    for (size_t i = 0; i < kCount; ++i) line << (i ? ", " : " ") << kParts[i] << " " << medianOf(parts[i]).value_or(0);
    line << " ms";
    m_out.info(line.str());
}

// A profile is a diagnostic: where it cannot be taken (a LibTorch built without Kineto, an
// unwritable path) the run goes on and its log says why.
void Trainer::startProfile() {
    try {
        compat::startProfiler(m_device.is_cuda());
        m_profiling = true;
    } catch (const std::exception& e) {
        m_out.warn(std::string("profiling is not available here: ") + e.what());
    }
}

void Trainer::writeProfile() {
    m_profiling = false;
    const std::string rank = std::to_string(m_groups.worldRank());
    std::string path = m_options.profileOut.empty() ? m_options.runDir + "/profile-rank" + rank + ".json"
                                                    : m_options.profileOut;
    // One file per rank: FILE.json becomes FILE-rank<R>.json when several ranks trace.
    if (!m_options.profileOut.empty() && m_groups.world->size() > 1) {
        const size_t dot = path.rfind('.'), slash = path.rfind('/');
        const size_t at = dot != std::string::npos && (slash == std::string::npos || dot > slash) ? dot : path.size();
        path.insert(at, "-rank" + rank);
    }
    try {
        compat::stopProfiler(path);
        m_out.info("profile of steps " + std::to_string(m_options.profileFirst) + " to " +
                   std::to_string(m_options.profileLast) + " written to " + path);
    } catch (const std::exception& e) {
        m_out.warn("the profile could not be written to " + path + ": " + e.what());
    }
}

} // namespace parallax
