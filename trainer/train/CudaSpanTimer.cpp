#include "trainer/train/CudaSpanTimer.h"

#include "trainer/train/CudaSupport.h"

#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <chrono>
#include <stdexcept>

namespace parallax {

CudaSpanTimer::CudaSpanTimer(torch::Device device) : m_device(device) {
    if (!device.is_cuda() || !device.has_index())
        throw std::invalid_argument("CudaSpanTimer needs a CUDA device with an index, got " + device.str());
}

size_t CudaSpanTimer::begin() {
    if (m_used == m_spans.size()) m_spans.push_back(std::make_unique<Span>());
    Span& s = *m_spans[m_used];
    s.ended = false;
    s.start.record(c10::cuda::getCurrentCUDAStream(m_device.index()));
    return m_used++;
}

void CudaSpanTimer::end(size_t span) {
    if (span >= m_used) throw std::out_of_range("CudaSpanTimer::end: span " + std::to_string(span) + " was not begun");
    Span& s = *m_spans[span];
    s.end.record(c10::cuda::getCurrentCUDAStream(m_device.index()));
    s.ended = true;
}

std::vector<std::pair<double, double>> CudaSpanTimer::resolve() {
    std::vector<std::pair<double, double>> out;
    if (m_used == 0) return out;
    synchronize(m_device);
    c10::cuda::CUDAGuard guard(m_device.index());
    // The anchor runs on a device with nothing left to do, so it completes as soon as it is
    // recorded; the clock read right after its completion is its time to within microseconds.
    at::cuda::CUDAEvent anchor(cudaEventDefault);
    anchor.record(c10::cuda::getCurrentCUDAStream(m_device.index()));
    anchor.synchronize();
    using namespace std::chrono;
    const double anchorSeconds = duration<double>(system_clock::now().time_since_epoch()).count();
    out.reserve(m_used);
    for (size_t i = 0; i < m_used; ++i) {
        Span& s = *m_spans[i];
        if (!s.ended) throw std::logic_error("CudaSpanTimer::resolve: span " + std::to_string(i) + " was not ended");
        // elapsed_time(other) is other - this, in milliseconds.
        const double startBefore = s.start.elapsed_time(anchor) / 1e3;
        const double endBefore = s.end.elapsed_time(anchor) / 1e3;
        out.emplace_back(anchorSeconds - startBefore, anchorSeconds - endBefore);
    }
    return out;
}

} // namespace parallax
