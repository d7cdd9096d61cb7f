// Runs under mpirun -np 2, one GPU per rank (the local rank's). Every rank runs every test; a failure
// on any rank fails the job. Skips, with the reason, without CUDA or with fewer than two GPUs.

#include "tests/support/MpiTestMain.h"

#include <gtest/gtest.h>
#include <mpi.h>

#if PARALLAX_WITH_CUDA
#include "trainer/comm/NcclCommunicator.h"
#include "trainer/comm/ProcessGroups.h"
#include "trainer/train/CudaSupport.h"

#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include <tuple>

namespace {

#if PARALLAX_WITH_CUDA

using namespace parallax;

// Why this host cannot run the tests, or "".
std::string missingHardware() {
    if (!torch::cuda::is_available()) return "no CUDA device";
    int ranks = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    if (static_cast<int>(torch::cuda::device_count()) < ranks)
        return "needs " + std::to_string(ranks) + " GPUs, this host has " + std::to_string(torch::cuda::device_count());
    return "";
}

#define REQUIRE_GPUS()                                      \
    do {                                                    \
        const std::string missing_ = missingHardware();     \
        if (!missing_.empty()) GTEST_SKIP() << missing_;    \
    } while (0)

torch::Device gpu() {
    static const torch::Device device = selectCudaDevice(localRank());
    return device;
}

// Released by main() before MPI_Finalize (and before CUDA's own teardown at exit).
std::shared_ptr<NcclCommunicator>& worldSlot() {
    static std::shared_ptr<NcclCommunicator> w;
    return w;
}

// The world over NCCL with channels to the neighbour (the pipeline's configuration).
std::shared_ptr<NcclCommunicator> world() {
    auto& w = worldSlot();
    if (!w) {
        NcclOptions options;
        options.p2pChannels = true;
        w = std::make_shared<NcclCommunicator>(std::make_unique<MpiCommunicator>(MPI_COMM_WORLD), gpu(), options);
    }
    return w;
}

torch::TensorOptions on(torch::ScalarType dtype) {
    return torch::TensorOptions().dtype(dtype).device(gpu());
}

TEST(NcclCommunicator, AllReduceSumMaxMinInEveryDtype) {
    REQUIRE_GPUS();
    auto w = world();
    const double n = w->size();
    for (auto dtype : {torch::kFloat, torch::kBFloat16, torch::kHalf, torch::kDouble, torch::kInt, torch::kLong,
                       torch::kByte}) {
        auto sum = torch::full({1000}, w->rank() + 1, on(dtype));
        w->allReduce(sum, ReduceOp::Sum);
        EXPECT_EQ(sum.to(torch::kDouble).min().item<double>(), n * (n + 1) / 2) << dtype;
        EXPECT_EQ(sum.to(torch::kDouble).max().item<double>(), n * (n + 1) / 2) << dtype;
        auto max = torch::full({7}, w->rank() * 3, on(dtype));
        w->allReduce(max, ReduceOp::Max);
        EXPECT_EQ(max[6].item<double>(), (n - 1) * 3) << dtype;
        auto min = torch::full({7}, w->rank() + 5, on(dtype));
        w->allReduce(min, ReduceOp::Min);
        EXPECT_EQ(min[0].item<double>(), 5) << dtype;
    }
}

TEST(NcclCommunicator, ReduceScatterAndAllGatherWithEqualChunks) {
    REQUIRE_GPUS();
    auto w = world();
    const int n = w->size();
    const int64_t chunk = 1 << 20;
    // Chunk i on rank r holds r * 100 + i.
    auto input = torch::empty({n, chunk}, on(torch::kFloat));
    for (int i = 0; i < n; ++i) input[i].fill_(w->rank() * 100 + i);
    auto out = torch::empty({chunk}, on(torch::kFloat));
    w->reduceScatter(out, input.reshape({-1}));
    float expected = 0;
    for (int r = 0; r < n; ++r) expected += static_cast<float>(r * 100 + w->rank());
    EXPECT_TRUE(torch::all(out.eq(expected)).item<bool>());

    auto gathered = torch::empty({n * chunk}, on(torch::kBFloat16));
    w->allGather(gathered, torch::full({chunk}, w->rank() + 1, on(torch::kBFloat16)));
    for (int r = 0; r < n; ++r)
        EXPECT_TRUE(torch::all(gathered.narrow(0, r * chunk, chunk).eq(r + 1)).item<bool>()) << "chunk " << r;
}

TEST(NcclCommunicator, BroadcastFromEachRoot) {
    REQUIRE_GPUS();
    auto w = world();
    for (int root = 0; root < w->size(); ++root) {
        auto t = w->rank() == root ? torch::arange(1000, on(torch::kLong)) * (root + 1) : torch::zeros({1000}, on(torch::kLong));
        w->broadcast(t, root);
        EXPECT_TRUE(torch::equal(t.cpu(), torch::arange(1000, torch::kLong) * (root + 1))) << "root " << root;
    }
}

TEST(NcclCommunicator, PairExchangesLargeMessagesBothWaysAtOnce) {
    REQUIRE_GPUS();
    auto w = world();
    ASSERT_EQ(w->size(), 2);
    const int peer = 1 - w->rank();
    ASSERT_TRUE(w->hasChannel(peer, true));
    ASSERT_TRUE(w->hasChannel(peer, false));
    // 64 MiB each way, both ranks sending before receiving: over one NCCL communicator the sends
    // would each wait for a receive queued behind them.
    const int64_t n = 16 << 20;
    std::vector<torch::Tensor> outgoing, incoming;
    std::vector<std::shared_ptr<Work>> works;
    // Every buffer exists before the first send: a device allocation (cudaMalloc) issued while a
    // send waits for its peer keeps the kernels queued after it from running beside the ones
    // before it (CUDA's implicit synchronization), so the receives could never start.
    for (int k = 0; k < 3; ++k) {
        outgoing.push_back(torch::full({n}, w->rank() * 10 + k, on(torch::kFloat)));
        incoming.push_back(torch::empty({n}, on(torch::kFloat)));
    }
    for (int k = 0; k < 3; ++k) works.push_back(w->sendAsync(outgoing[static_cast<size_t>(k)], peer, /*tag=*/k));
    for (int k = 0; k < 3; ++k) works.push_back(w->recvAsync(incoming[static_cast<size_t>(k)], peer, /*tag=*/k));
    for (auto& work : works) work->wait();
    for (int k = 0; k < 3; ++k) {
        EXPECT_EQ(incoming[k].min().item<float>(), static_cast<float>(peer * 10 + k)) << "message " << k;
        EXPECT_EQ(incoming[k].max().item<float>(), static_cast<float>(peer * 10 + k)) << "message " << k;
    }
}

TEST(NcclCommunicator, PipelineStyleHeaderThenTensors) {
    REQUIRE_GPUS();
    auto w = world();
    const int peer = 1 - w->rank();
    // As PipelineEngine does: a header on the GPU describes the tensors that follow; the receiver
    // reads it on the host, allocates, then receives them. Both ranks send first.
    auto shape = torch::tensor({3, 5 + w->rank(), 7}, torch::kLong).to(gpu());
    auto payload = torch::full({3, 5 + w->rank(), 7}, w->rank() + 0.5, on(torch::kFloat));
    auto s1 = w->sendAsync(shape, peer, 0);
    auto s2 = w->sendAsync(payload, peer, 1);
    auto header = torch::zeros({3}, on(torch::kLong));
    w->recv(header, peer, 0);
    const auto dims = header.cpu();
    auto received = torch::empty({dims[0].item<int64_t>(), dims[1].item<int64_t>(), dims[2].item<int64_t>()},
                                 on(torch::kFloat));
    w->recv(received, peer, 1);
    s1->wait();
    s2->wait();
    EXPECT_EQ(received.size(1), 5 + peer);
    EXPECT_EQ(received.min().item<float>(), peer + 0.5f);
    EXPECT_EQ(received.max().item<float>(), peer + 0.5f);
}

TEST(NcclCommunicator, CollectiveRunsAfterWorkQueuedOnTheCallersStream) {
    REQUIRE_GPUS();
    auto w = world();
    // A long chain of kernels writes the input; the all-reduce must not start before it finishes.
    auto t = torch::zeros({1 << 22}, on(torch::kFloat));
    for (int i = 0; i < 200; ++i) t.add_(1.0f);
    auto work = w->allReduceAsync(t, ReduceOp::Sum);
    work->wait();
    EXPECT_EQ(t.min().item<float>(), 200.0f * w->size());
}

TEST(NcclCommunicator, WaitOrdersWhicheverStreamIsCurrent) {
    REQUIRE_GPUS();
    auto w = world();
    auto t = torch::ones({1 << 24}, on(torch::kFloat));
    auto work = w->allReduceAsync(t, ReduceOp::Sum);
    work->wait();
    // Queued after wait() on the current stream: sees the reduced values.
    auto doubled = t * 2;
    EXPECT_EQ(doubled.max().item<float>(), 2.0f * w->size());
    EXPECT_TRUE(work->test());
    // On a side stream as well: wait() applies to whichever stream is current.
    auto side = c10::cuda::getStreamFromPool(false, gpu().index());
    auto u = torch::ones({1 << 20}, on(torch::kFloat));
    {
        c10::cuda::CUDAStreamGuard guard(side);
        auto work2 = w->allReduceAsync(u, ReduceOp::Sum);
        work2->wait();
        u.mul_(3);
    }
    c10::cuda::getCurrentCUDAStream(gpu().index()).synchronize();
    side.synchronize();
    EXPECT_EQ(u.min().item<float>(), 3.0f * w->size());
}

TEST(NcclCommunicator, FreedInputsAreNotReusedBeforeTheOperationEnds) {
    REQUIRE_GPUS();
    auto w = world();
    const int64_t n = 1 << 22;
    auto output = torch::empty({n * w->size()}, on(torch::kFloat));
    std::shared_ptr<Work> work;
    {
        auto input = torch::full({n}, w->rank() + 1, on(torch::kFloat));
        work = w->allGatherAsync(output, input);
    } // input freed while the gather may still read it
    // Same-size allocations on the caller's stream would take the freed block if it were not
    // recorded on the communication stream.
    std::vector<torch::Tensor> scribble;
    for (int i = 0; i < 8; ++i) scribble.push_back(torch::full({n}, -7.0f, on(torch::kFloat)));
    work->wait();
    for (int r = 0; r < w->size(); ++r)
        EXPECT_TRUE(torch::all(output.narrow(0, r * n, n).eq(r + 1)).item<bool>()) << "chunk " << r;
}

TEST(NcclCommunicator, StatsCountOperationsBytesAndCompletion) {
    REQUIRE_GPUS();
    auto w = world();
    const CommStats before = w->stats();
    auto t = torch::ones({1024}, on(torch::kFloat));
    for (int i = 0; i < 5; ++i) w->allReduce(t, ReduceOp::Sum);
    w->synchronize();
    const CommStats after = w->stats();
    EXPECT_EQ(after.collectives - before.collectives, 5);
    EXPECT_EQ(after.bytes - before.bytes, 5 * 1024 * 4);
    EXPECT_EQ(after.last_seq, after.collectives);
    EXPECT_EQ(w->inFlight(), 0u);
}

TEST(NcclCommunicator, CpuTensorsAndScalarsGoOverMpi) {
    REQUIRE_GPUS();
    auto w = world();
    auto all = torch::zeros({w->size() * 4}, torch::kUInt8);
    w->allGather(all, torch::full({4}, w->rank() + 1, torch::kUInt8));
    for (int r = 0; r < w->size(); ++r) EXPECT_EQ(all[r * 4].item<int>(), r + 1);
    EXPECT_EQ(w->allReduceScalar(1.0, ReduceOp::Sum), w->size());
    const auto [value, rank] = w->maxLoc(w->rank() == 1 ? 42.0 : 1.0);
    EXPECT_EQ(value, 42.0);
    EXPECT_EQ(rank, 1);
    w->barrier();
}

TEST(NcclCommunicator, MistakesAreClearErrors) {
    REQUIRE_GPUS();
    auto w = world();
    auto flags = torch::zeros({4}, on(torch::kBool));
    EXPECT_THROW(w->allReduce(flags, ReduceOp::Sum), std::invalid_argument);
    auto mixedOut = torch::zeros({8}, on(torch::kFloat));
    EXPECT_THROW(w->allGather(mixedOut, torch::zeros({4})), std::invalid_argument);
    auto t = torch::zeros({4}, on(torch::kFloat));
    try {
        w->send(t, w->rank(), 0);
        FAIL() << "a send to oneself must be refused";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("itself"), std::string::npos) << e.what();
    }
    const int other = (gpu().index() + 1) % static_cast<int>(torch::cuda::device_count());
    auto elsewhere = torch::zeros({4}, torch::TensorOptions().device(torch::Device(torch::kCUDA, other)));
    try {
        w->allReduce(elsewhere, ReduceOp::Sum);
        FAIL() << "a tensor on another GPU must be refused";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("cuda:" + std::to_string(other)), std::string::npos) << e.what();
    }
}

TEST(NcclProcessGroups, GroupsHoldTheRightPeersOnTheGpu) {
    REQUIRE_GPUS();
    int worldSize = 1, worldRank = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &worldSize);
    MPI_Comm_rank(MPI_COMM_WORLD, &worldRank);
    for (const auto& [dp, tp, pp] : {std::tuple{2, 1, 1}, std::tuple{1, 2, 1}, std::tuple{1, 1, 2}}) {
        ProcessGroups g = ProcessGroups::createNccl(dp, tp, pp, gpu().index());
        EXPECT_EQ(g.world->backend(), "nccl");
        EXPECT_EQ(g.dp->size(), dp);
        EXPECT_EQ(g.tp->size(), tp);
        EXPECT_EQ(g.pp->size(), pp);
        EXPECT_EQ(g.mp->size(), tp * pp);
        // The world rank summed over each group on the GPU identifies its members.
        auto sumOver = [&](Communicator& c) {
            auto t = torch::full({1}, static_cast<double>(worldRank), on(torch::kDouble));
            c.allReduce(t, ReduceOp::Sum);
            return t.item<double>();
        };
        const double everyone = worldSize * (worldSize - 1) / 2.0;
        EXPECT_EQ(sumOver(*g.dp), dp == 2 ? everyone : worldRank);
        EXPECT_EQ(sumOver(*g.tp), tp == 2 ? everyone : worldRank);
        EXPECT_EQ(sumOver(*g.pp), pp == 2 ? everyone : worldRank);
        // A group of one rank copies locally.
        auto& single = dp == 1 ? *g.dp : *g.tp;
        auto in = torch::arange(6, on(torch::kFloat));
        auto out = torch::zeros({6}, on(torch::kFloat));
        single.reduceScatter(out, in);
        EXPECT_TRUE(torch::equal(out, in));
        if (pp == 2) {
            auto* ppComm = dynamic_cast<NcclCommunicator*>(g.pp.get());
            ASSERT_NE(ppComm, nullptr);
            EXPECT_TRUE(ppComm->hasChannel(1 - g.coord.pp, true));
            EXPECT_TRUE(ppComm->hasChannel(1 - g.coord.pp, false));
        }
    }
}

#else

TEST(NcclCommunicator, NeedsACudaBuild) {
    GTEST_SKIP() << "built without CUDA (LibTorch without CUDA, or NCCL not found)";
}

#endif

} // namespace

int main(int argc, char** argv) {
    return parallax::test::runTestsUnderMpi(argc, argv, [] {
#if PARALLAX_WITH_CUDA
        worldSlot().reset();
#endif
    });
}
