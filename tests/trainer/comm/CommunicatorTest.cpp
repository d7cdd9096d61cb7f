// Runs under mpirun (-np 4, and 8 for the 2x2x2 mesh): every rank runs every test; a failure on any
// rank fails the job.

#include "tests/support/MpiTestMain.h"
#include "trainer/comm/MpiCommunicator.h"
#include "trainer/comm/ProcessGroups.h"

#include <gtest/gtest.h>
#include <mpi.h>

using namespace parallax;

namespace {

std::shared_ptr<Communicator> world() {
    static std::shared_ptr<Communicator> w = std::make_shared<MpiCommunicator>(MPI_COMM_WORLD);
    return w;
}

TEST(MpiCommunicator, AllReduceSumMaxMin) {
    auto w = world();
    auto t = torch::full({5}, static_cast<float>(w->rank() + 1));
    w->allReduce(t, ReduceOp::Sum);
    const float n = static_cast<float>(w->size());
    EXPECT_TRUE(torch::all(t.eq(n * (n + 1) / 2)).item<bool>());
    auto m = torch::full({3}, static_cast<double>(w->rank()), torch::kDouble);
    w->allReduce(m, ReduceOp::Max);
    EXPECT_EQ(m[0].item<double>(), w->size() - 1);
    auto l = torch::full({3}, static_cast<int64_t>(w->rank() + 10), torch::kLong);
    w->allReduce(l, ReduceOp::Min);
    EXPECT_EQ(l[2].item<int64_t>(), 10);
}

TEST(MpiCommunicator, ReduceScatterAndAllGatherAreInverseShapes) {
    auto w = world();
    const int n = w->size();
    // input chunk i on rank r = r * 100 + i
    auto input = torch::empty({n, 4});
    for (int i = 0; i < n; ++i) input[i].fill_(w->rank() * 100 + i);
    auto out = torch::empty({4});
    w->reduceScatter(out, input.reshape({-1}));
    float expected = 0;
    for (int r = 0; r < n; ++r) expected += static_cast<float>(r * 100 + w->rank());
    EXPECT_TRUE(torch::all(out.eq(expected)).item<bool>());

    auto gathered = torch::empty({n * 4});
    w->allGather(gathered, torch::full({4}, static_cast<float>(w->rank())));
    for (int r = 0; r < n; ++r) EXPECT_EQ(gathered[r * 4 + 3].item<float>(), static_cast<float>(r));
}

TEST(MpiCommunicator, BroadcastSendRecvAndAsyncOverlap) {
    auto w = world();
    auto b = w->rank() == 2 ? torch::arange(6, torch::kFloat) : torch::zeros({6});
    w->broadcast(b, 2);
    EXPECT_TRUE(torch::equal(b, torch::arange(6, torch::kFloat)));

    // Ring: send to the right, receive from the left, both in flight at once.
    const int right = (w->rank() + 1) % w->size(), left = (w->rank() + w->size() - 1) % w->size();
    auto outgoing = torch::full({1000}, static_cast<float>(w->rank()));
    auto incoming = torch::empty({1000});
    auto s = w->sendAsync(outgoing, right, 11);
    auto r = w->recvAsync(incoming, left, 11);
    r->wait();
    s->wait();
    EXPECT_EQ(incoming[999].item<float>(), static_cast<float>(left));

    // Several all-reduces in flight, completed out of order.
    std::vector<torch::Tensor> ts;
    std::vector<std::shared_ptr<Work>> works;
    for (int i = 0; i < 4; ++i) {
        ts.push_back(torch::full({100000}, 1.0f));
        works.push_back(w->allReduceAsync(ts.back()));
    }
    for (int i = 3; i >= 0; --i) works[static_cast<size_t>(i)]->wait();
    for (auto& t : ts) EXPECT_EQ(t[0].item<float>(), static_cast<float>(w->size()));
    EXPECT_GE(w->stats().last_seq, 4);
    EXPECT_GT(w->stats().bytes, 0);
}

TEST(MpiCommunicator, ScalarsAndMaxLoc) {
    auto w = world();
    EXPECT_EQ(w->allReduceScalar(1.0, ReduceOp::Sum), w->size());
    const auto [value, rank] = w->maxLoc(w->rank() == 1 ? 99.0 : 1.0);
    EXPECT_EQ(value, 99.0);
    EXPECT_EQ(rank, 1);
}

TEST(MpiCommunicator, UnsupportedReductionDtypeIsAClearError) {
    auto w = world();
    auto t = torch::zeros({4}, torch::kBFloat16);
    try {
        w->allReduce(t);
        FAIL() << "bf16 reduction on CPU must be refused";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("reduce_dtype"), std::string::npos);
    }
}

TEST(MeshCoord, TensorParallelVariesFastestThenDataThenPipeline) {
    // dp=2, tp=2, pp=2: rank 5 = (pp 1, dp 0, tp 1)
    const MeshCoord c = meshCoord(5, 2, 2, 2);
    EXPECT_EQ(c.tp, 1);
    EXPECT_EQ(c.dp, 0);
    EXPECT_EQ(c.pp, 1);
    for (int r = 0; r < 8; ++r) EXPECT_EQ(meshRank(meshCoord(r, 2, 2, 2), 2, 2, 2), r);
}

TEST(ProcessGroups, GroupsHoldTheRightPeers) {
    auto w = world();
    // Every factorization of the world size into dp * tp * pp.
    for (int tp = 1; tp <= w->size(); ++tp) {
        for (int pp = 1; pp * tp <= w->size(); ++pp) {
            if (w->size() % (tp * pp) != 0) continue;
            const int dp = w->size() / (tp * pp);
            ProcessGroups g = ProcessGroups::createMpi(dp, tp, pp);
            EXPECT_EQ(g.dp->size(), dp);
            EXPECT_EQ(g.tp->size(), tp);
            EXPECT_EQ(g.pp->size(), pp);
            EXPECT_EQ(g.mp->size(), tp * pp);
            EXPECT_EQ(g.dp->rank(), g.coord.dp);
            EXPECT_EQ(g.tp->rank(), g.coord.tp);
            EXPECT_EQ(g.pp->rank(), g.coord.pp);
            // Summing world ranks over each group identifies its members.
            auto sumOver = [&](Communicator& c) {
                return c.allReduceScalar(static_cast<double>(w->rank()), ReduceOp::Sum);
            };
            double dpExpected = 0, tpExpected = 0, ppExpected = 0;
            for (int i = 0; i < dp; ++i) dpExpected += meshRank({i, g.coord.tp, g.coord.pp}, dp, tp, pp);
            for (int i = 0; i < tp; ++i) tpExpected += meshRank({g.coord.dp, i, g.coord.pp}, dp, tp, pp);
            for (int i = 0; i < pp; ++i) ppExpected += meshRank({g.coord.dp, g.coord.tp, i}, dp, tp, pp);
            EXPECT_EQ(sumOver(*g.dp), dpExpected) << "dp" << dp << " tp" << tp << " pp" << pp;
            EXPECT_EQ(sumOver(*g.tp), tpExpected);
            EXPECT_EQ(sumOver(*g.pp), ppExpected);
            EXPECT_EQ(g.stageRank(g.coord.pp), w->rank());
        }
    }
}

TEST(ProcessGroups, WrongWorldSizeNamesTheLayout) {
    auto w = world();
    try {
        ProcessGroups::createMpi(w->size() + 1, 1, 1);
        FAIL();
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("dp*tp*pp"), std::string::npos);
    }
}

} // namespace

int main(int argc, char** argv) { return parallax::test::runTestsUnderMpi(argc, argv); }
