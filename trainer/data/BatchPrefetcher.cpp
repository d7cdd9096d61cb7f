#include "trainer/data/BatchPrefetcher.h"

#include "trainer/data/Dataset.h"
#include "trainer/data/DistributedSampler.h"

#include <c10/core/DeviceGuard.h>

#include <optional>
#include <stdexcept>
#include <string>

namespace parallax {

namespace {

torch::Tensor pinned(const torch::Tensor& t) {
    return t.defined() && !t.is_pinned() ? t.pin_memory() : t;
}

} // namespace

BatchPrefetcher::BatchPrefetcher(const Dataset& dataset, DistributedSampler& sampler, int64_t first, int64_t end,
                                 int64_t accumulation, torch::Device device, int depth)
    : m_dataset(dataset), m_sampler(sampler), m_end(end), m_accumulation(accumulation), m_device(device),
      m_depth(static_cast<size_t>(depth < 1 ? 1 : depth)), m_next(first) {
    m_thread = std::thread([this] { run(); });
}

BatchPrefetcher::~BatchPrefetcher() {
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_stop = true;
    }
    m_changed.notify_all();
    m_thread.join();
}

void BatchPrefetcher::run() {
    // Pinned memory belongs to this rank's GPU: without the guard this thread would work on GPU 0.
    std::optional<c10::DeviceGuard> guard;
    if (m_device.is_cuda()) guard.emplace(m_device);
    for (int64_t step = m_next; step < m_end; ++step) {
        {
            std::unique_lock<std::mutex> lock(m_mutex);
            m_changed.wait(lock, [this] { return m_stop || m_ready.size() < m_depth; });
            if (m_stop) break;
        }
        Ready ready;
        ready.step = step;
        try {
            ready.micro.reserve(static_cast<size_t>(m_accumulation));
            for (int64_t k = 0; k < m_accumulation; ++k) {
                Batch b = m_dataset.makeBatch(m_sampler.microBatch(step, k), step);
                if (m_device.is_cuda()) {
                    b.tokens = pinned(b.tokens);
                    b.labels = pinned(b.labels);
                    b.images = pinned(b.images);
                    b.noise = pinned(b.noise);
                    b.timesteps = pinned(b.timesteps);
                    b.pixels = pinned(b.pixels);
                }
                ready.micro.push_back(std::move(b));
            }
        } catch (...) {
            ready.micro.clear();
            ready.error = std::current_exception();
        }
        const bool failed = ready.error != nullptr;
        {
            std::lock_guard<std::mutex> lock(m_mutex);
            m_ready.push_back(std::move(ready));
        }
        m_changed.notify_all();
        if (failed) break; // nothing is made past a failed step
    }
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_finished = true;
    }
    m_changed.notify_all();
}

std::vector<Batch> BatchPrefetcher::take(int64_t step) {
    if (step != m_next || step >= m_end)
        throw std::logic_error("BatchPrefetcher: step " + std::to_string(step) + " asked for, expected step " +
                               std::to_string(m_next) + " of [.., " + std::to_string(m_end) + ")");
    Ready ready;
    {
        std::unique_lock<std::mutex> lock(m_mutex);
        m_changed.wait(lock, [this] { return !m_ready.empty() || m_finished; });
        if (m_ready.empty())
            throw std::logic_error("BatchPrefetcher: step " + std::to_string(step) +
                                   " asked for after the step whose batches failed");
        ready = std::move(m_ready.front());
        m_ready.pop_front();
    }
    m_changed.notify_all();
    ++m_next;
    if (ready.error) std::rethrow_exception(ready.error);
    return std::move(ready.micro);
}

} // namespace parallax
