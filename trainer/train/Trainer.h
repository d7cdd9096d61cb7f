#pragma once

#include "core/spec/ModelDims.h"
#include "core/spec/RunSpec.h"
#include "trainer/comm/ProcessGroups.h"
#include "trainer/finetune/Finetune.h"
#include "trainer/models/Model.h"
#include "trainer/models/PublishedWeights.h"
#include "trainer/parallel/Parallelize.h"
#include "trainer/parallel/PipelineEngine.h"
#include "trainer/train/AgreedFailure.h"
#include "trainer/train/BatchFlops.h"
#include "trainer/train/Checkpoint.h"
#include "trainer/train/RunSamples.h"
#include "trainer/train/TelemetryEmitter.h"

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace parallax {

class BatchEncoder;
class BatchPrefetcher;
class Dataset;
class DistributedSampler;
class PipelineEngine;
class AdamW;
class CheckpointMapping;
class StepReporter;
class OptimizerStream;
class StepClock;
class FlightRecorder;

struct WorkerOptions {
    std::string runDir;         // checkpoints go to <runDir>/checkpoints
    int cudaDevice = -1;        // this rank's GPU (selected by the caller) for launch.device = "cuda"
    std::string resumeFrom;     // a checkpoint folder or a checkpoints folder; empty: start fresh
    int64_t stopAfter = -1;     // act as if a stop was requested once this many steps are done
    int64_t profileFirst = -1;  // profile steps [profileFirst, profileLast] (Kineto); -1: off
    int64_t profileLast = -1;
    std::string profileOut;     // Chrome trace (FILE-rank<R>.json with several ranks); empty: <runDir>/profile-rank<R>.json
    // Every operation of the process groups (recordCommunication): each step's time blocked in
    // collectives comes from it. Null: no per-rank step times are reported.
    std::shared_ptr<FlightRecorder> recorder;
};

// What one rank reports at the end.
struct TrainResult {
    std::string status;         // succeeded | stopped
    int64_t steps_done = 0;     // the next step that would run
    std::vector<double> losses; // per step run in this process (every rank holds them)
    std::string checkpoint;     // the last checkpoint written, if any
};

// The training loop of one rank: builds the model, applies the layout's parallelism, feeds its
// share of every global batch, reduces, steps the optimizer, checkpoints and reports telemetry.
class Trainer {
public:
    Trainer(RunSpec spec, WorkerOptions options, ProcessGroups& groups, TelemetryEmitter& out);
    ~Trainer();

    TrainResult run();

private:
    // bf16 compute with fp32 parameters, gradients and optimizer state: bf16 autocast on a GPU.
    bool bf16Autocast() const { return m_device.is_cuda() && m_spec.train.precision == Precision::Bf16; }
    // The model, its parallelism (parallelize), the optimizer and the data.
    void setup();
    void resume();
    // The dataset (makeDataset), the same on every rank, and the step's encoder where it needs one.
    void openDataset();
    // Sets this rank's part of the model from a model folder, and says how long that took and the
    // memory it held at most.
    void loadModelWeights(const WeightSource& weights);
    // Announces the run (run_start) and sets up the step reporter.
    void startReporting();
    // A step whose work is queued on the device; finishStep() reads and reports it.
    struct QueuedStep {
        int64_t step = 0;
        double lr = 0;
        int64_t optimizerStepsBefore = 0;
        std::vector<SpanEvent> spans;
        double hostMs = 0; // the host's time queueing the step (all of it on a CPU)
        double waitMs = 0; // of which blocked in collectives
        int64_t positions = 0; // conversations: the positions the step's samples filled, over the replicas
        double flops = 0;      // latent models: the step's training FLOPs at its batches' shapes, over the replicas
    };
    // Queues one step: forward, backward, reductions, the gradient norm, clipping and the update,
    // decided on the device (a non-finite norm skips this and every later update there).
    QueuedStep queueStep(int64_t step);
    // Waits for the oldest queued step, checks its gradient norm (stopOnNonFiniteGradient) and
    // reports it (StepReporter); returns its global mean loss.
    double finishStep(const QueuedStep& queued, TrainResult& result);
    std::string saveCheckpoint(int64_t nextStep);
    // A LoRA run: the adapter of the checkpoint in `checkpointDir` as a PEFT folder in it and in the
    // run folder (<run dir>/adapter: the latest), written by rank 0; every rank fails alike.
    void writeAdapters(const std::string& checkpointDir, int64_t nextStep);
    // Keeps the weights of the last finite step in a checkpoint and throws, naming the step and the fix.
    [[noreturn]] void stopOnNonFiniteGradient(int64_t step);

    RunSpec m_spec;
    WorkerOptions m_options;
    ProcessGroups& m_groups;
    TelemetryEmitter& m_out;
    ModelDims m_dims;
    torch::Device m_device{torch::kCPU};
    std::shared_ptr<Model> m_model;
    AppliedFinetune m_finetune; // what trains: [finetune] applied to the model
    std::unique_ptr<Dataset> m_dataset;
    std::unique_ptr<BatchEncoder> m_encoder; // the dataset's step encoder (frozen VAE, text encoder); null: none
    std::unique_ptr<DistributedSampler> m_sampler;
    std::unique_ptr<BatchPrefetcher> m_prefetcher; // reads m_dataset and m_sampler: declared after them
    std::unique_ptr<RunSamples> m_samples;         // [samples]; null: none drawn
    ParallelModel m_parallel;
    std::unique_ptr<PipelineEngine> m_engine;
    std::unique_ptr<SpanTimer> m_spanTimer;
    std::unique_ptr<AdamW> m_optimizer;
    std::unique_ptr<CheckpointMapping> m_checkpoints;
    std::unique_ptr<StepReporter> m_reporter;
    // Where the reducer asks for it (ZeRO-3) on a GPU: the optimizer's own stream (null elsewhere).
    std::unique_ptr<OptimizerStream> m_optimizerStream;
    int64_t m_startStep = 0;
    double m_flopsPerToken = 0;
    std::unique_ptr<BatchFlops> m_batchFlops; // FLOPs at each micro-batch's shape (latent models)
    double m_peakFlops = 0;
    double m_lastGradNorm = 0;
    std::unique_ptr<StepClock> m_stepClock;
    torch::Tensor m_nonFinite; // on the device: whether any queued step's gradient norm was not finite
    double m_clockOffset = 0; // this rank's clock - rank 0's clock, seconds
};

} // namespace parallax
