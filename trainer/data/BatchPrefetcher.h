#pragma once

#include "trainer/models/Model.h"

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace parallax {

class Dataset;
class DistributedSampler;

// Makes the host batches of the steps ahead on a thread of its own while the loop trains on the
// current one, as a data loader's workers do: a dataset that builds its samples on the CPU
// (decoding, drawing images) would otherwise keep the device idle for that long every step.
// Steps come in order, [first, end), each as its `accumulation` micro-batches, at most `depth`
// steps ahead of the one taken. With `pin` (a GPU run) every tensor is put in pinned memory there,
// so that the copy to the device is queued without blocking the host.
//
// The batches are those makeBatch(sampler.microBatch(step, k), step) gives on the loop's thread:
// the dataset and the sampler are read only by this thread from construction on. What makeBatch
// throws for a step is thrown by take() of that step, where the loop would have met it.
class BatchPrefetcher {
public:
    BatchPrefetcher(const Dataset& dataset, DistributedSampler& sampler, int64_t first, int64_t end,
                    int64_t accumulation, torch::Device device, int depth = 2);
    // Stops making batches (one being made is finished first) and joins the thread.
    ~BatchPrefetcher();
    BatchPrefetcher(const BatchPrefetcher&) = delete;
    BatchPrefetcher& operator=(const BatchPrefetcher&) = delete;

    // The micro-batches of `step`, the next step in order; waits until they are made. Throws
    // std::logic_error for a step out of order, past the end or after a step that failed.
    std::vector<Batch> take(int64_t step);

private:
    struct Ready {
        int64_t step = 0;
        std::vector<Batch> micro;
        std::exception_ptr error;
    };
    void run();

    const Dataset& m_dataset;
    DistributedSampler& m_sampler;
    const int64_t m_end;
    const int64_t m_accumulation;
    const torch::Device m_device;
    const size_t m_depth;
    int64_t m_next; // the step take() expects

    std::mutex m_mutex;
    std::condition_variable m_changed;
    std::deque<Ready> m_ready;
    bool m_stop = false;
    bool m_finished = false; // the thread makes no more steps (the last one made, or one failed)
    std::thread m_thread;
};

} // namespace parallax
