#pragma once

#include "trainer/train/StepClock.h"

#include <ATen/cuda/CUDAEvent.h>

#include <deque>
#include <memory>

namespace parallax {

// Steps timed by CUDA events on the current stream: a step lasts from the end of the step queued
// before it (or, when none was in flight, from its own begin()) to its own end, as the GPU ran
// them, so time the GPU spent waiting for the host counts in. Its scalars come back through pinned
// host memory. Only in builds with PARALLAX_WITH_CUDA.
class CudaStepClock : public StepClock {
public:
    explicit CudaStepClock(torch::Device device);
    void begin() override;
    void lap() override;
    void end(const torch::Tensor& scalars) override;
    StepReading read() override;
    size_t unread() const override { return m_queued.size(); }

private:
    using Event = std::shared_ptr<at::cuda::CUDAEvent>;
    struct Queued {
        Event start, end;
        std::vector<Event> laps;
        torch::Tensor host; // pinned; filled when `end` has completed
    };
    Event record();

    torch::Device m_device;
    Event m_start;    // of the step being queued
    std::vector<Event> m_laps; // of the step being queued
    Event m_lastEnd;  // of the last step queued, while unread
    std::deque<Queued> m_queued;
};

} // namespace parallax
