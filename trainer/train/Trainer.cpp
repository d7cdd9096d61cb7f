#include "trainer/train/Trainer.h"

#include "trainer/comm/FlightRecorder.h"

#include "core/spec/Estimates.h"
#include "core/spec/LayoutLabel.h"
#include "core/spec/ModelKinds.h"
#include "core/util/Files.h"
#include "core/util/HostName.h"

#include "trainer/compat/TorchCompat.h"
#include "trainer/data/BatchPrefetcher.h"
#include "trainer/data/Dataset.h"
#include "trainer/compat/HostHeap.h"
#include "trainer/data/DatasetUtils.h"
#include "trainer/data/DistributedSampler.h"
#include "trainer/finetune/AdapterFolder.h"
#include "trainer/models/PublishedWeights.h"
#include "trainer/train/AdamW.h"
#include "trainer/train/CheckpointMapping.h"
#include "trainer/train/DevicePeak.h"
#include "trainer/train/DeviceSampler.h"
#include "trainer/train/OptimizerSetup.h"
#include "trainer/data/DataError.h"
#include "trainer/train/RankExchange.h"
#include "trainer/train/RunStartReport.h"
#include "trainer/train/StepClock.h"
#include "trainer/train/StepProfiler.h"
#include "trainer/train/StepReporter.h"
#include "trainer/train/StopRequest.h"
#include "trainer/train/UnitTimer.h"
#if PARALLAX_WITH_CUDA
#include "trainer/train/CudaSpanTimer.h"
#include "trainer/train/CudaStepClock.h"
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iomanip>
#include <optional>
#include <set>
#include <sstream>

namespace parallax {

Trainer::Trainer(RunSpec spec, WorkerOptions options, ProcessGroups& groups, TelemetryEmitter& out)
    : m_spec(std::move(spec)), m_options(std::move(options)), m_groups(groups), m_out(out) {
    if (m_spec.launch.device == Device::Cuda) {
        if (m_options.cudaDevice < 0)
            throw std::invalid_argument("launch.device = \"cuda\" but no GPU was selected for this rank");
        m_device = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(m_options.cudaDevice));
    }
#if PARALLAX_WITH_CUDA
    if (m_device.is_cuda()) {
        m_spanTimer = std::make_unique<CudaSpanTimer>(m_device);
        m_stepClock = std::make_unique<CudaStepClock>(m_device);
    }
#endif
    if (!m_spanTimer) m_spanTimer = std::make_unique<WallSpanTimer>();
    if (!m_stepClock) m_stepClock = std::make_unique<HostStepClock>();
}

Trainer::~Trainer() {
    // Whatever is freed next on the compute stream comes after the last update that reads it.
    if (m_optimizerStream) m_optimizerStream->waitAll();
}

void Trainer::setup() {
    m_dims = resolveModel(m_spec.model);
    // A model folder's weights are read after parallelism has divided the model, each rank reading
    // only its part; the model is built without drawing values, its memory untouched until then.
    std::unique_ptr<PublishedWeightSource> weights;
    if (m_spec.model.from.empty()) {
        m_model = buildModel(m_dims, m_spec.train.seed);
    } else {
        m_model = constructModel(m_dims);
        weights = std::make_unique<PublishedWeightSource>(*m_model, m_spec.model.from);
    }
    // What trains is decided on the whole single-device model, before parallelism divides it.
    m_finetune = applyFinetune(*m_model, finetuneOf(m_spec, m_dims), m_spec.train.seed);
    if (m_groups.worldRank() == 0 && !m_finetune.summary().empty()) m_out.info(m_finetune.summary());
    m_flopsPerToken = trainingFlopsPerSample(m_dims, m_spec.finetune) /
                      static_cast<double>(std::max<int64_t>(1, m_dims.tokensPerSample()));
    m_batchFlops = std::make_unique<BatchFlops>(m_dims, m_spec.finetune);

    m_parallel = parallelize(*m_model, m_spec, m_dims, m_groups, m_device);
    if (m_groups.worldRank() == 0 && m_parallel.frozenInProductType > 0)
        m_out.info("frozen Linear weights held in bf16 only (no fp32 copy): " +
                   std::to_string(m_parallel.frozenInProductType) + " values");
    m_engine = std::make_unique<PipelineEngine>(std::move(m_parallel.chunks), m_groups, m_spec.parallel.schedule.value(),
                                                static_cast<int>(m_spec.accumulation()));
    m_engine->keepInputs(m_spec.telemetry.unit_times);

    OptimizerSetup optimizer = setUpOptimizer(m_spec.train, m_parallel, m_device);
    m_optimizer = std::move(optimizer.optimizer);
    m_optimizerStream = std::move(optimizer.stream);
    m_checkpoints = std::make_unique<CheckpointMapping>(*m_model, *m_parallel.buckets, *m_parallel.reducer, *m_optimizer,
                                                        m_parallel.tpPlan, m_groups);
    if (weights) {
        loadModelWeights(*weights);
        weights.reset();      // the folder's files unmapped,
        releaseFreedMemory(); // and what converting their values left in the heap handed back
    } else {
        m_checkpoints->setBaseSeed(m_spec.train.seed);
    }

    openDataset();
    m_sampler = std::make_unique<DistributedSampler>(m_dataset->size(), m_spec.train.global_batch, m_groups.dpSize,
                                                     m_groups.coord.dp, m_spec.train.micro_batch,
                                                     m_spec.train.seed, m_spec.data.shuffle);
    if (const std::vector<int64_t> groups = m_dataset->sampleGroups(); !groups.empty()) {
        const int64_t left = m_sampler->setGroups(groups);
        const size_t kinds = std::set<int64_t>(groups.begin(), groups.end()).size();
        if (kinds > 1 && m_groups.worldRank() == 0)
            m_out.info("aspect buckets: " + std::to_string(kinds) + ", each micro-batch of one; an epoch leaves out " +
                       std::to_string(left) + " samples (each bucket's last, shorter run of train.micro_batch)");
    }

    m_samples = RunSamples::make(m_spec, *m_model, *m_dataset, m_encoder.get(), m_groups, m_device, m_out);

    const PeakFlops peak = devicePeakFlops(m_device.is_cuda() ? m_device.index() : -1, m_spec.train.precision.value(),
                                           torch::get_num_threads());
    m_peakFlops = peak.flops;
    if (m_groups.worldRank() == 0) m_out.info("MFU peak per device: " + peak.basis);
}

void Trainer::openDataset() {
    // Rank 0 checks a dataset's cache against its files; the others open the cache it found complete,
    // or, where it found none (latents encoded in the step), read the dataset themselves. Every rank
    // ends with rank 0's message when its check fails.
    const bool rank0 = m_groups.worldRank() == 0;
    const bool checkedFirst = m_spec.data.kind.known() && m_spec.data.kind.value() == DataKind::Latents;
    std::string failure;
    auto open = [&](bool verify) {
        try {
            m_dataset = makeDataset(m_spec.data, m_dims, m_spec.train.seed, m_spec.model.from, verify);
        } catch (const std::exception& e) {
            failure = e.what();
        }
    };
    if (checkedFirst) {
        if (rank0) open(true);
        const bool inStep = rank0 && m_dataset && !m_dataset->stepEncodingNote().empty();
        const bool rank0InStep = m_groups.world->allReduceScalar(inStep ? 1.0 : 0.0, ReduceOp::Max) > 0;
        if (!rank0) open(rank0InStep);
    } else {
        open(rank0);
    }
    if (const std::string agreed = firstFailure(failure, *m_groups.world); !agreed.empty()) throw DataError(agreed);
    const std::string note = m_dataset->stepEncodingNote();
    const double inStepRanks = m_groups.world->allReduceScalar(note.empty() ? 0.0 : 1.0, ReduceOp::Sum);
    if (inStepRanks != 0 && inStepRanks != m_groups.world->size())
        throw DataError("data.path = \"" + m_spec.data.path + "\": its latent cache changed while the ranks opened it "
                        "(is `parallax-cli cache` writing it?); start the run again once it is done");
    if (note.empty()) return;
    if (rank0) m_out.info(note);
    // The encoders in the run's precision, as `parallax-cli cache --bf16` makes the cache on a GPU.
    std::string loadFailure;
    try {
        m_encoder = m_dataset->makeStepEncoder(m_device, bf16Autocast() ? torch::kBFloat16 : torch::kFloat32);
    } catch (const std::exception& e) {
        loadFailure = e.what();
    }
    if (const std::string agreed = firstFailure(loadFailure, *m_groups.world); !agreed.empty()) throw DataError(agreed);
}

void Trainer::loadModelWeights(const WeightSource& weights) {
    const auto start = std::chrono::steady_clock::now();
    m_checkpoints->loadWeights(weights);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::ostringstream line;
    line << std::fixed << std::setprecision(1) << "read this rank's part of model.from = " << m_spec.model.from << " in "
         << seconds << " s; peak resident memory so far " << DeviceSampler::peakResidentBytes() / (1024.0 * 1024.0)
         << " MiB";
    m_out.info(line.str());
}

std::string Trainer::saveCheckpoint(int64_t nextStep) {
    CheckpointMeta meta;
    meta.step = nextStep;
    meta.layout = layoutLabel(m_spec.parallel);
    meta.seed = m_spec.train.seed;
    meta.dims = m_dims;
    // The pieces are read on the compute stream: after the optimizer's stream has written them.
    if (m_optimizerStream) m_optimizerStream->waitAll();
    const std::string dir = m_checkpoints->save(joinPath(m_options.runDir, "checkpoints"), meta, m_out, m_options.resumeFrom);
    if (m_finetune.lora()) writeAdapters(dir, nextStep);
    return dir;
}

void Trainer::writeAdapters(const std::string& checkpointDir, int64_t nextStep) {
    std::string failure;
    if (m_groups.worldRank() == 0) {
        try {
            // The checkpoint holds every adapter whole, whatever the layout divided.
            const CheckpointReader reader(checkpointDir);
            const FullTensor full = [&reader](const std::string& name) { return reader.full(name, "param"); };
            AdapterBase base;
            base.model = m_spec.model.from;
            const Objective objective = modelKindInfo(m_dims.kind).objective;
            if (objective == Objective::NextToken || objective == Objective::Conversation) base.task = "CAUSAL_LM";
            base.diffusers = readsLatents(modelKindInfo(m_dims.kind));
            // Keys in the layout of the kind's newest published layout (what current transformers names).
            if (!modelKindInfo(m_dims.kind).layouts.empty()) base.layout = modelKindInfo(m_dims.kind).layouts.back();
            writeAdapterFolder(joinPath(checkpointDir, "adapter"), m_finetune, base, full);
            writeAdapterFolder(joinPath(m_options.runDir, "adapter"), m_finetune, base, full);
        } catch (const std::exception& e) {
            failure = "writing the LoRA adapter of " + checkpointDir + " failed: " + e.what() +
                      "; the checkpoint itself is complete";
        }
    }
    const std::string agreed = firstFailure(failure, *m_groups.world);
    if (!agreed.empty()) throw AgreedFailure(agreed, nextStep);
}

void Trainer::resume() {
    if (!m_options.resumeFrom.empty())
        m_startStep = m_checkpoints->resume(m_options.resumeFrom, m_dims, m_device, m_out).step;
}

Trainer::QueuedStep Trainer::queueStep(int64_t step) {
    QueuedStep queued;
    queued.step = step;
    queued.lr = learningRate(step, m_spec.train.steps, m_spec.train.warmup, m_spec.train.lr, m_spec.train.min_lr);
    m_stepClock->begin();
    const int64_t accumulation = m_spec.accumulation();
    std::vector<Batch> micro;
    micro.reserve(static_cast<size_t>(accumulation));
    int64_t localCount = 0, localPositions = 0;
    double localFlops = 0;
    for (const Batch& batch : m_prefetcher->take(step)) {
        localCount += lossElements(m_dims, batch); // on the host copy: no wait for the device
        localPositions += filledPositions(m_dims, batch);
        localFlops += m_batchFlops->of(batch);
        // An image-caption batch without its cache: the frozen encoders make its latents and prompt states here.
        micro.push_back(m_encoder ? m_encoder->encode(batch) : batch.to(m_device));
    }
    const double globalCount = m_groups.dp->allReduceScalar(static_cast<double>(localCount), ReduceOp::Sum);
    // Samples of varying length (conversations, latents) count the positions they fill, not model.seq_len.
    if (countsFilledPositions(m_dims))
        queued.positions = static_cast<int64_t>(
            m_groups.dp->allReduceScalar(static_cast<double>(localPositions), ReduceOp::Sum));
    // Every rank of a replica prices the same batches: the sum over the replicas is the step's.
    if (m_batchFlops->pricesBatches())
        queued.flops = m_groups.dp->allReduceScalar(localFlops, ReduceOp::Sum);

    GradientReducer& reducer = *m_parallel.reducer;
    reducer.beginStep(static_cast<int>(accumulation));
    const bool recordSpans = m_spec.telemetry.span_every > 0 && step % m_spec.telemetry.span_every == 0;
    PipelineEngine::Result r;
    {
        // bf16 compute with fp32 parameters, gradients and optimizer state.
        compat::AutocastScope autocast(c10::DeviceType::CUDA, at::kBFloat16, bf16Autocast());
        r = m_engine->runStep(micro, globalCount, step, recordSpans ? m_spanTimer.get() : nullptr,
                              [&reducer] { reducer.afterMicroBatch(); });
    }
    queued.spans = std::move(r.spans);
    m_stepClock->lap();
    reducer.finishStep();
    if (m_parallel.ties) m_parallel.ties->addGradients(reducer);
    m_stepClock->lap();

    const auto f64 = torch::TensorOptions().dtype(torch::kDouble).device(m_device);
    // Every gradient value counts once: replicated tensor-parallel parameters on tp rank 0 only, and
    // over the data-parallel group too when each rank holds a slice.
    torch::Tensor normSq = reducer.gradNormSquared(m_groups.coord.tp == 0);
    if (!normSq.defined()) normSq = torch::zeros({1}, f64);
    (reducer.gradientsSliced() ? m_groups.world : m_groups.mp)->allReduce(normSq, ReduceOp::Sum);
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
    reducer.beforeOptimizerStep(step + 1 < m_spec.train.steps);
    if (m_optimizerStream)
        m_optimizerStream->run([&] { m_optimizer->step(queued.lr, scale, m_nonFinite); }, {scale, m_nonFinite});
    else
        m_optimizer->step(queued.lr, scale, m_nonFinite);
    reducer.afterOptimizerStep();
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
    result.losses.push_back(loss);
    if (queued.step == m_startStep) {
        const std::string note = m_parallel.reducer->residencyNote();
        if (!note.empty()) m_out.info(note);
    }
    FinishedStep f;
    f.step = queued.step;
    f.loss = loss;
    f.lr = queued.lr;
    f.gradNorm = m_lastGradNorm;
    f.ms = reading.ms;
    f.lapMs = reading.lapMs;
    f.hostMs = queued.hostMs;
    f.waitMs = queued.waitMs;
    f.spans = queued.spans;
    f.positions = queued.positions;
    f.flops = queued.flops;
    m_reporter->report(f);
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

void Trainer::startReporting() {
    RunFigures figures;
    for (const auto& p : m_model->parameters()) figures.params += p.numel();
    figures.flopsPerToken = m_flopsPerToken;
    figures.peakFlops = m_peakFlops;
    figures.device = m_device;
    figures.startStep = m_startStep;
    figures.dataset = m_dataset->describe();
    m_clockOffset = reportRunStart(m_spec, m_groups, figures, m_out);
    StepReporter::Options reporting;
    reporting.steps = m_spec.train.steps;
    reporting.startStep = m_startStep;
    reporting.stepEvery = m_spec.telemetry.step_every;
    reporting.globalBatch = m_spec.train.global_batch;
    reporting.tokensPerSample = m_dims.tokensPerSample();
    reporting.flopsPerToken = m_flopsPerToken;
    reporting.peakFlops = m_peakFlops;
    reporting.rankSteps = m_options.recorder != nullptr;
    reporting.clockOffset = m_clockOffset;
    m_reporter = std::make_unique<StepReporter>(m_out, m_groups, m_device, reporting);
}

TrainResult Trainer::run() {
    setup();
    resume();
    startReporting();

    m_prefetcher = std::make_unique<BatchPrefetcher>(*m_dataset, *m_sampler, m_startStep, m_spec.train.steps,
                                                     m_spec.accumulation(), m_device);
    const int gpu = m_device.is_cuda() ? m_device.index() : -1;
    DeviceSampler sampler(m_out, hostName(), gpu, static_cast<int>(m_spec.telemetry.device_sample_ms));
    m_out.emit(sampler.sample());
    sampler.start();

    StepProfiler profiler(m_options.profileFirst, m_options.profileLast, m_options.profileOut, m_options.runDir,
                          m_groups.worldRank(), m_groups.world->size(), m_device.is_cuda(), m_out);
    TrainResult result;
    result.status = "succeeded";
    int64_t step = m_startStep;
    if (m_samples && m_samples->due(step, m_startStep)) m_samples->draw(step, bf16Autocast());
    // Step N+1 is queued before step N is read, so the device goes on while the host reports. The
    // queue drains where the host needs the device idle: the last step, a checkpoint, a profile's
    // end, a stop.
    std::optional<QueuedStep> inFlight;
    for (; step < m_spec.train.steps; ++step) {
        profiler.beforeStep(step);
        if (m_options.recorder) m_options.recorder->takeWaitSeconds(); // waits before this step are not its own
        const auto queueStart = std::chrono::steady_clock::now();
        QueuedStep queued = queueStep(step);
        queued.hostMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - queueStart).count();
        if (m_options.recorder) queued.waitMs = m_options.recorder->takeWaitSeconds() * 1e3;
        if (inFlight) finishStep(*inFlight, result);
        inFlight = std::move(queued);

        const bool scriptedStop = m_options.stopAfter >= 0 && step + 1 >= m_options.stopAfter;
        const bool stop = m_groups.world->allReduceScalar(StopRequest::requested() || scriptedStop ? 1.0 : 0.0,
                                                          ReduceOp::Max) > 0;
        const int64_t every = m_spec.train.checkpoint_every;
        const bool checkpoint = every > 0 && (step + 1) % every == 0 && step + 1 < m_spec.train.steps;
        const bool profileEnds = profiler.endsAfter(step);
        const bool samples = !stop && m_samples && m_samples->due(step + 1, m_startStep);
        if (stop || checkpoint || samples || profileEnds || step + 1 == m_spec.train.steps) {
            finishStep(*inFlight, result);
            inFlight.reset();
        }
        if (profileEnds) profiler.finish();
        if (stop) {
            ++step;
            result.status = "stopped";
            break;
        }
        if (checkpoint) result.checkpoint = saveCheckpoint(step + 1);
        if (samples) m_samples->draw(step + 1, bf16Autocast());
    }
    sampler.stop();
    m_prefetcher.reset(); // the steps it made ahead of a stop are not trained
    m_reporter->logBreakdown();
    result.steps_done = step;
    result.checkpoint = saveCheckpoint(step);
    // After the checkpoint: timing the units leaves gradients in the parameters. In the precision
    // the steps ran in: the kept inputs are what bf16 products returned, and their time is the
    // step's.
    if (m_spec.telemetry.unit_times && result.status == "succeeded") {
        compat::AutocastScope autocast(c10::DeviceType::CUDA, at::kBFloat16, bf16Autocast());
        for (const UnitTimeEvent& e : timeUnits(*m_engine, m_groups, m_device, 3)) m_out.emit(e);
    }
    if (m_spec.telemetry.collective_times && result.status == "succeeded")
        for (const CollectiveTimeEvent& e : timeCollectives(m_groups, m_device, collectiveProbeBytes(), 5)) m_out.emit(e);
    return result;
}

} // namespace parallax
