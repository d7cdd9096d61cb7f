#pragma once

#include "core/spec/RunSpec.h"
#include "trainer/comm/ProcessGroups.h"
#include "trainer/data/Dataset.h"
#include "trainer/models/Model.h"
#include "trainer/models/QwenImageVae.h"
#include "trainer/train/TelemetryEmitter.h"

#include <torch/torch.h>

#include <chrono>
#include <cstdint>
#include <memory>

namespace parallax {

// The images a qwen_image or qwen_image_vae run draws as it trains ([samples]): before the first step of a new run,
// after every samples.every steps, and after the last. Image i takes dataset sample i's prompt
// states and its latents' size, seed train.seed + i, and samples.steps denoising steps of
// QwenImageSampler, decoded by model.from's VAE (loaded once, decoder only). The images are shared
// out over the data-parallel ranks (i on dp rank i mod dp); the tensor-parallel ranks of one draw
// together; the first of them emits a SampleEvent with the PNG. Every rank calls draw() at the same
// steps, with the device idle (the step queue drained). The validator's [samples] checks hold.
// A qwen_image_vae run's image i is dataset sample i beside what its VAE gives back (the posterior's
// mean decoded), one PNG twice as wide: how well it reconstructs, step by step.
class RunSamples {
public:
    // Null when the spec draws no samples (samples.every = 0, or a kind that draws none).
    // `encoder`: the dataset's step encoder (Dataset::makeStepEncoder), null where it needs none.
    static std::unique_ptr<RunSamples> make(const RunSpec& spec, Model& model, const Dataset& dataset,
                                            const BatchEncoder* encoder, const ProcessGroups& groups,
                                            torch::Device device, TelemetryEmitter& out);

    // Whether samples are drawn after `step` optimizer steps, of a run that started at `startStep`.
    bool due(int64_t step, int64_t startStep) const;
    // Draws this rank's share of the images after `step` optimizer steps; `bf16` under bf16 autocast.
    void draw(int64_t step, bool bf16);

private:
    RunSamples(const RunSpec& spec, Model& model, const Dataset& dataset, const BatchEncoder* encoder,
               const ProcessGroups& groups, torch::Device device, TelemetryEmitter& out);
    SampleEvent drawOne(int64_t index, int64_t step);
    SampleEvent reconstructOne(const Batch& batch, int64_t index, int64_t step,
                               std::chrono::steady_clock::time_point start);

    const RunSpec& m_spec;
    Model& m_model;
    const Dataset& m_dataset;
    const BatchEncoder* m_encoder;
    const ProcessGroups& m_groups;
    torch::Device m_device;
    TelemetryEmitter& m_out;
    std::shared_ptr<QwenImageVae> m_vae;
    int64_t m_count = 0; // images each time: samples.count, at most the dataset's size
};

} // namespace parallax
