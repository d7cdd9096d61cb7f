#include "trainer/train/OptimizerStream.h"

#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <map>

namespace parallax {
namespace {

class CudaOptimizerStream : public OptimizerStream {
public:
    explicit CudaOptimizerStream(c10::DeviceIndex device)
        : m_device(device), m_stream(c10::cuda::getStreamFromPool(/*isHighPriority=*/false, device)) {}

    void run(const std::function<void()>& update, std::vector<torch::Tensor> keep) override {
        const c10::cuda::CUDAStream compute = c10::cuda::getCurrentCUDAStream(m_device);
        at::cuda::CUDAEvent ready;
        ready.record(compute);
        ready.block(m_stream);
        {
            const c10::cuda::CUDAStreamGuard guard(m_stream);
            update();
        }
        m_done.record(m_stream);
        // The previous update's inputs: the compute stream waited for that update before anything
        // it queued since (waitAll() at its first gradient write), so their memory may go back.
        m_keep = std::move(keep);
    }

    void unitUpdated(int unit) override {
        auto& event = m_units[unit];
        if (!event) event = std::make_unique<at::cuda::CUDAEvent>();
        event->record(m_stream);
    }

    void waitUnit(int unit) override {
        const auto it = m_units.find(unit);
        if (it == m_units.end() || !it->second) return;
        it->second->block(c10::cuda::getCurrentCUDAStream(m_device));
    }

    void waitAll() override {
        if (m_done.isCreated()) m_done.block(c10::cuda::getCurrentCUDAStream(m_device));
    }

private:
    c10::DeviceIndex m_device;
    c10::cuda::CUDAStream m_stream;
    at::cuda::CUDAEvent m_done;
    std::map<int, std::unique_ptr<at::cuda::CUDAEvent>> m_units;
    std::vector<torch::Tensor> m_keep;
};

} // namespace

std::unique_ptr<OptimizerStream> OptimizerStream::forDevice(const torch::Device& device) {
    if (!device.is_cuda()) return nullptr;
    return std::make_unique<CudaOptimizerStream>(device.has_index() ? device.index() : c10::cuda::current_device());
}

} // namespace parallax
