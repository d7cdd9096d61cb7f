#include "trainer/train/UnitTimer.h"

#include "trainer/train/TelemetryEmitter.h"

#if PARALLAX_WITH_CUDA
#include "trainer/train/CudaSupport.h"
#endif

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <thread>

namespace parallax {

namespace {

void waitFor(const torch::Device& device) {
#if PARALLAX_WITH_CUDA
    if (device.is_cuda()) synchronize(device);
#else
    (void)device;
#endif
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// A unit's input as a leaf of its own: floating tensors require grad (their gradient is what the
// unit's backward computes for the unit before it), the rest (token ids) stay as they are.
Activation leafInput(const Activation& a) {
    Activation out;
    for (const torch::Tensor& t : a) {
        torch::Tensor leaf = t.detach().clone();
        if (leaf.is_floating_point()) leaf.set_requires_grad(true);
        out.push_back(leaf);
    }
    return out;
}

// Every rank of the group arrives; the waiting ones sleep between polls instead of spinning in MPI.
void quietBarrier(Communicator& group) {
    torch::Tensor token = torch::zeros({1});
    const std::shared_ptr<Work> arrived = group.allReduceAsync(token, ReduceOp::Sum);
    while (!arrived->test()) std::this_thread::sleep_for(std::chrono::milliseconds(2));
}

std::vector<UnitTimeEvent> timeChunks(PipelineEngine& engine, const torch::Device& device, int rank, int repeats) {
    using Clock = std::chrono::steady_clock;
    auto ms = [](Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); };
    repeats = std::max(1, repeats);
    const std::vector<Activation>& inputs = engine.keptInputs();
    const Batch& batch = engine.keptBatch();
    std::vector<UnitTimeEvent> out;
    for (size_t c = 0; c < engine.chunks().size(); ++c) {
        const StageChunk& chunk = engine.chunks()[c];
        if (c >= inputs.size())
            throw std::logic_error("timing units: the pipeline kept no input for chunk " + std::to_string(c));
        Activation input = inputs[c];
        for (size_t j = 0; j < chunk.units.size(); ++j) {
            Unit& unit = *chunk.units[j];
            std::vector<double> forward, backward;
            Activation output;
            for (int r = 0; r <= repeats; ++r) { // the first pass warms up
                const Activation x = leafInput(input);
                waitFor(device);
                const Clock::time_point t0 = Clock::now();
                output = unit.forward(x, batch);
                waitFor(device);
                const Clock::time_point t1 = Clock::now();
                std::vector<torch::Tensor> roots, grads;
                for (const torch::Tensor& y : output)
                    if (y.requires_grad()) {
                        roots.push_back(y);
                        grads.push_back(torch::ones_like(y));
                    }
                if (!roots.empty()) torch::autograd::backward(roots, grads);
                waitFor(device);
                const Clock::time_point t2 = Clock::now();
                if (r == 0) continue;
                forward.push_back(ms(t1 - t0));
                backward.push_back(ms(t2 - t1));
            }
            UnitTimeEvent e;
            e.rank = rank;
            e.stage = chunk.virtualStage;
            e.unit = chunk.indices.at(j);
            e.kind = unit.kindName();
            e.forward_ms = median(forward);
            e.backward_ms = median(backward);
            e.t = TelemetryEmitter::now();
            out.push_back(e);
            input.clear();
            for (const torch::Tensor& y : output) input.push_back(y.detach());
        }
    }
    return out;
}

} // namespace

std::vector<UnitTimeEvent> timeUnits(PipelineEngine& engine, ProcessGroups& groups, const torch::Device& device,
                                     int repeats) {
    if (device.is_cuda()) return timeChunks(engine, device, groups.worldRank(), repeats);
    std::vector<UnitTimeEvent> out;
    for (int stage = 0; stage < groups.ppSize; ++stage) {
        if (stage == groups.coord.pp) out = timeChunks(engine, device, groups.worldRank(), repeats);
        quietBarrier(*groups.world);
    }
    return out;
}

const std::vector<int64_t>& collectiveProbeBytes() {
    static const std::vector<int64_t> sizes = {8 << 10, 128 << 10, 1 << 20, 8 << 20};
    return sizes;
}

std::vector<CollectiveTimeEvent> timeCollectives(ProcessGroups& groups, const torch::Device& device,
                                                 const std::vector<int64_t>& bytes, int repeats) {
    using Clock = std::chrono::steady_clock;
    repeats = std::max(1, repeats);
    Communicator& world = *groups.world;
    std::vector<CollectiveTimeEvent> out;
    for (const int64_t size : bytes) {
        torch::Tensor buffer =
            torch::ones({std::max<int64_t>(1, size / 4)}, torch::TensorOptions().dtype(torch::kFloat32).device(device));
        std::vector<double> times;
        for (int r = 0; r <= repeats; ++r) { // the first warms up
            waitFor(device);
            world.barrier();
            const Clock::time_point t0 = Clock::now();
            world.allReduce(buffer);
            waitFor(device);
            const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
            if (r > 0) times.push_back(ms);
        }
        if (world.rank() != 0) continue;
        CollectiveTimeEvent e;
        e.rank = 0;
        e.group = "world";
        e.op = "all_reduce";
        e.ranks = world.size();
        e.bytes = buffer.numel() * 4;
        e.ms = median(times);
        e.t = TelemetryEmitter::now();
        out.push_back(e);
    }
    return out;
}

} // namespace parallax
