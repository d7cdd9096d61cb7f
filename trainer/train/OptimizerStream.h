#pragma once

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <vector>

namespace parallax {

// The optimizer on a CUDA stream of its own, so that the next step's forward runs while the update
// of the later units' slices is still going (ZeRO-3: the update is per unit, in forward order, and
// each unit's next gather waits only for that unit's slices). The compute stream waits for the
// whole update before it writes a gradient slice again. No CUDA types here: on a CPU build
// forDevice() returns null and the optimizer runs where it always did.
class OptimizerStream {
public:
    virtual ~OptimizerStream() = default;
    // A stream for `device`, or null where there is none to have (a CPU device or build).
    static std::unique_ptr<OptimizerStream> forDevice(const torch::Device& device);

    // Queues `update` on the optimizer stream after all the work queued so far on the current
    // (compute) stream; `update` runs on the host now with the optimizer stream current. `keep`:
    // tensors the update reads that the compute stream made; they stay allocated until the compute
    // stream has waited for this update (the next waitAll()).
    virtual void run(const std::function<void()>& update, std::vector<torch::Tensor> keep) = 0;
    // Inside `update`: unit `unit`'s slices are updated as of this point of the optimizer stream.
    virtual void unitUpdated(int unit) = 0;
    // The current stream waits until unit `unit`'s slices are written by the last update that
    // marked it (no wait for a unit never marked).
    virtual void waitUnit(int unit) = 0;
    // The current stream waits for the whole last update.
    virtual void waitAll() = 0;
};

} // namespace parallax
