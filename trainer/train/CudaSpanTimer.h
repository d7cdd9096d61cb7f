#pragma once

#include "trainer/parallel/SpanTimer.h"

#include <torch/torch.h>

#include <ATen/cuda/CUDAEvent.h>

#include <memory>
#include <utility>
#include <vector>

namespace parallax {

// Times GPU work by CUDA events recorded on the current stream around it, so that a span covers
// when the GPU ran the work rather than when the host queued it. resolve() waits for the device and
// turns the events into wall-clock seconds (system clock, seconds since the epoch, like
// the other telemetry times): it records one more event on the idle device and reads the clock
// when that event has completed, then places every span relative to it. Events are kept for the
// next step. Only in builds with PARALLAX_WITH_CUDA.
class CudaSpanTimer : public SpanTimer {
public:
    explicit CudaSpanTimer(torch::Device device);
    CudaSpanTimer(const CudaSpanTimer&) = delete;
    CudaSpanTimer& operator=(const CudaSpanTimer&) = delete;

    // Records the start of a span on the current stream; returns its index for end().
    size_t begin() override;
    void end(size_t span) override;
    size_t size() const { return m_used; }

    // (start, end) of every span since the last clear(), in wall-clock seconds, in the order they
    // were begun, once the device has done their work (it waits for it); throws when a span was
    // begun but not ended.
    std::vector<std::pair<double, double>> resolve() override;
    // Forgets the spans, keeping their events for reuse.
    void clear() override { m_used = 0; }

private:
    struct Span {
        at::cuda::CUDAEvent start{cudaEventDefault}; // timing on (CUDAEvent's default has it off)
        at::cuda::CUDAEvent end{cudaEventDefault};
        bool ended = false;
    };
    torch::Device m_device;
    std::vector<std::unique_ptr<Span>> m_spans;
    size_t m_used = 0;
};

} // namespace parallax
