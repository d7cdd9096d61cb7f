#include "core/spec/ModelDims.h"
#include "trainer/data/BatchPrefetcher.h"
#include "trainer/data/DataError.h"
#include "trainer/data/DistributedSampler.h"
#include "trainer/data/SyntheticDataset.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace parallax {
namespace {

ModelDims dimsOf(ModelKind kind) {
    ModelSpec spec;
    spec.kind = kind;
    return resolveModel(spec);
}

void expectSameTensor(const torch::Tensor& a, const torch::Tensor& b, const char* what) {
    ASSERT_EQ(a.defined(), b.defined()) << what;
    if (!a.defined()) return;
    EXPECT_TRUE(torch::equal(a, b)) << what;
}

// Each step's micro-batches are exactly those the loop's own makeBatch calls give, for a kind
// whose batches carry many fields (qwen_image: latents, prompt states and their mask, noise and
// timesteps).
TEST(BatchPrefetcher, GivesEachStepTheBatchesMakeBatchGivesInOrder) {
    const ModelDims dims = dimsOf(ModelKind::QwenImage);
    SyntheticDataset data(dims, 11);
    DistributedSampler direct(data.size(), 8, 2, 1, 2, 11, true);
    DistributedSampler ahead(data.size(), 8, 2, 1, 2, 11, true);
    BatchPrefetcher prefetcher(data, ahead, 3, 9, direct.microBatches(), torch::kCPU);
    for (int64_t step = 3; step < 9; ++step) {
        const std::vector<Batch> got = prefetcher.take(step);
        ASSERT_EQ(static_cast<int64_t>(got.size()), direct.microBatches());
        for (int64_t k = 0; k < direct.microBatches(); ++k) {
            const Batch want = data.makeBatch(direct.microBatch(step, k), step);
            const Batch& b = got[static_cast<size_t>(k)];
            EXPECT_EQ(b.sample_index, want.sample_index) << "step " << step << " micro " << k;
            expectSameTensor(b.tokens, want.tokens, "tokens");
            expectSameTensor(b.images, want.images, "images");
            expectSameTensor(b.noise, want.noise, "noise");
            expectSameTensor(b.timesteps, want.timesteps, "timesteps");
            expectSameTensor(b.text_states, want.text_states, "text_states");
            expectSameTensor(b.attention_mask, want.attention_mask, "attention_mask");
            expectSameTensor(b.labels, want.labels, "labels");
        }
    }
}

TEST(BatchPrefetcher, RefusesAStepOutOfOrderOrPastTheEnd) {
    const ModelDims dims = dimsOf(ModelKind::Gpt);
    SyntheticDataset data(dims, 1);
    DistributedSampler sampler(data.size(), 4, 1, 0, 4, 1, false);
    BatchPrefetcher prefetcher(data, sampler, 0, 2, 1, torch::kCPU);
    EXPECT_THROW(prefetcher.take(1), std::logic_error);
    EXPECT_NO_THROW(prefetcher.take(0));
    EXPECT_NO_THROW(prefetcher.take(1));
    EXPECT_THROW(prefetcher.take(2), std::logic_error);
}

// A dataset whose samples past a given index cannot be read, as a truncated file's would not.
class FailingDataset : public Dataset {
public:
    FailingDataset(const ModelDims& dims, int64_t firstBad) : m_inner(dims, 5), m_firstBad(firstBad) {}
    int64_t size() const override { return m_inner.size(); }
    Batch makeBatch(const std::vector<int64_t>& indices, int64_t step) const override {
        for (int64_t i : indices)
            if (i >= m_firstBad) throw DataError("sample " + std::to_string(i) + " is unreadable");
        return m_inner.makeBatch(indices, step);
    }
    std::string describe() const override { return "failing"; }

private:
    SyntheticDataset m_inner;
    int64_t m_firstBad;
};

// The steps before the failing one arrive whole; the failing step's take() throws what makeBatch
// threw, where the loop would have met it.
TEST(BatchPrefetcher, ThrowsAStepsDataErrorAtThatStep) {
    const ModelDims dims = dimsOf(ModelKind::Gpt);
    FailingDataset data(dims, 8); // steps 0 and 1 read samples 0..7; step 2 reads 8..11
    DistributedSampler sampler(data.size(), 4, 1, 0, 4, 5, false);
    BatchPrefetcher prefetcher(data, sampler, 0, 5, 1, torch::kCPU);
    EXPECT_EQ(prefetcher.take(0).at(0).sample_index, (std::vector<int64_t>{0, 1, 2, 3}));
    EXPECT_EQ(prefetcher.take(1).at(0).sample_index, (std::vector<int64_t>{4, 5, 6, 7}));
    try {
        prefetcher.take(2);
        FAIL() << "step 2 reads sample 8, which the dataset cannot read";
    } catch (const DataError& e) {
        EXPECT_STREQ(e.what(), "sample 8 is unreadable");
    }
    EXPECT_THROW(prefetcher.take(3), std::logic_error) << "nothing is made past the failed step, and nothing waits";
}

// A dataset that counts the batches made, to see how far ahead the thread runs.
class CountingDataset : public Dataset {
public:
    explicit CountingDataset(const ModelDims& dims) : m_inner(dims, 5) {}
    int64_t size() const override { return m_inner.size(); }
    Batch makeBatch(const std::vector<int64_t>& indices, int64_t step) const override {
        ++made;
        return m_inner.makeBatch(indices, step);
    }
    std::string describe() const override { return "counting"; }
    mutable std::atomic<int> made{0};

private:
    SyntheticDataset m_inner;
};

// At most `depth` steps are made ahead of the one taken, and a prefetcher dropped with steps
// still to make (a run stopped early) stops and joins at once.
TEST(BatchPrefetcher, RunsAtMostDepthStepsAheadAndStopsWhenDropped) {
    const ModelDims dims = dimsOf(ModelKind::Gpt);
    CountingDataset data(dims);
    DistributedSampler sampler(data.size(), 4, 1, 0, 2, 5, false);
    {
        BatchPrefetcher prefetcher(data, sampler, 0, 1000, 2, torch::kCPU, 3);
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (data.made.load() < 6 && std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        EXPECT_EQ(data.made.load(), 6) << "3 steps of 2 micro-batches ahead, no more";
        prefetcher.take(0);
        while (data.made.load() < 8 && std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        EXPECT_EQ(data.made.load(), 8) << "one step taken, one more made";
    }
    EXPECT_EQ(data.made.load(), 8) << "nothing made after the prefetcher was dropped";
}

} // namespace
} // namespace parallax
