#pragma once

#include <torch/torch.h>

#include <ATen/cuda/CUDAEvent.h>

#include <memory>
#include <utility>
#include <vector>

namespace parallax {

// Times GPU work by CUDA events recorded on the current stream around it, so that a span covers
// when the GPU ran the work rather than when the host queued it. After the step's synchronize(),
// resolve() turns the events into wall-clock seconds (system clock, seconds since the epoch, like
// the other telemetry times): it records one more event on the idle device and reads the clock
// when that event has completed, then places every span relative to it. Events are kept for the
// next step. Only in builds with PARALLAX_WITH_CUDA.
class CudaSpanTimer {
public:
    explicit CudaSpanTimer(torch::Device device);
    CudaSpanTimer(const CudaSpanTimer&) = delete;
    CudaSpanTimer& operator=(const CudaSpanTimer&) = delete;

    // Records the start of a span on the current stream; returns its index for end().
    size_t begin();
    void end(size_t span);
    size_t size() const { return m_used; }

    // (start, end) of every span since the last clear(), in wall-clock seconds, in the order they
    // were begun. Call once their work has completed (after synchronize()); throws when a span was
    // begun but not ended.
    std::vector<std::pair<double, double>> resolve();
    // Forgets the spans, keeping their events for reuse.
    void clear() { m_used = 0; }

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
