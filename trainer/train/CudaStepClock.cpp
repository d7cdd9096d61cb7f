#include "trainer/train/CudaStepClock.h"

#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <stdexcept>

namespace parallax {

CudaStepClock::CudaStepClock(torch::Device device) : m_device(device) {
    if (!device.is_cuda() || !device.has_index())
        throw std::invalid_argument("CudaStepClock needs a CUDA device with an index, got " + device.str());
}

CudaStepClock::Event CudaStepClock::record() {
    auto e = std::make_shared<at::cuda::CUDAEvent>(cudaEventDefault); // timing on
    e->record(c10::cuda::getCurrentCUDAStream(m_device.index()));
    return e;
}

void CudaStepClock::begin() {
    // Back to back with the step before: the gap between them belongs to this one.
    m_start = !m_queued.empty() && m_lastEnd ? m_lastEnd : record();
    m_laps.clear();
}

void CudaStepClock::lap() {
    m_laps.push_back(record());
}

void CudaStepClock::end(const torch::Tensor& scalars) {
    if (!m_start) throw std::logic_error("CudaStepClock::end without begin");
    Queued q;
    q.start = m_start;
    q.laps = std::move(m_laps);
    m_laps.clear();
    q.host = torch::empty({scalars.numel()}, torch::TensorOptions().dtype(torch::kDouble).pinned_memory(true));
    q.host.copy_(scalars.reshape({-1}).to(torch::kDouble), /*non_blocking=*/true);
    q.end = record();
    m_lastEnd = q.end;
    m_start.reset();
    m_queued.push_back(std::move(q));
}

StepReading CudaStepClock::read() {
    if (m_queued.empty()) throw std::logic_error("StepClock::read: no step has ended");
    Queued q = std::move(m_queued.front());
    m_queued.pop_front();
    c10::cuda::CUDAGuard guard(m_device.index());
    q.end->synchronize();
    StepReading r;
    r.ms = q.start->elapsed_time(*q.end);
    at::cuda::CUDAEvent* from = q.start.get();
    for (const Event& e : q.laps) {
        r.lapMs.push_back(from->elapsed_time(*e));
        from = e.get();
    }
    r.lapMs.push_back(from->elapsed_time(*q.end));
    r.scalars.assign(q.host.data_ptr<double>(), q.host.data_ptr<double>() + q.host.numel());
    if (m_queued.empty()) m_lastEnd.reset();
    return r;
}

} // namespace parallax
