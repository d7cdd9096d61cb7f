#include "core/launch/Continuation.h"
#include "core/spec/SpecOverrides.h"

#include <gtest/gtest.h>

using namespace parallax;

namespace {

RunSpec hostsSpec(int64_t dp, int64_t tp, int64_t globalBatch, int64_t microBatch) {
    RunSpec s;
    s.parallel.dp = dp;
    s.parallel.tp = tp;
    s.train.global_batch = globalBatch;
    s.train.micro_batch = microBatch;
    s.launch.target = Target::Hosts;
    s.launch.hosts = {"node1:2", "node2:2", "node3:2"};
    s.launch.on_host_failure = OnHostFailure::Resume;
    return s;
}

} // namespace

TEST(Continuation, TheLargestDpThatFitsTheHostsThatAnswerKeepsTheGlobalBatch) {
    // dp=3 x tp=2 on three hosts of two slots; node2 is lost: two hosts hold dp=2 x tp=2, and the
    // global batch of 12 splits into micro-batches of 2 on each of the two replicas.
    const RunSpec spec = hostsSpec(3, 2, 12, 2);
    const ContinuationResult r = planContinuation(spec, {"node1:2", "node3:2"}, {"node2"});
    ASSERT_TRUE(r.plan) << r.error;
    EXPECT_EQ(r.plan->dp, 2);
    EXPECT_EQ(r.plan->sets, (std::vector<std::string>{"launch.exclude_hosts=[\"node2\"]", "parallel.dp=2"}));
    EXPECT_EQ(r.plan->said, "on node1, node3 as dp=2 (tp=2, pp=1; 3 micro-batch(es) a step on each rank, the global "
                            "batch of 12 kept)");
    // The sets make the spec it continues with.
    const RunSpec next = applySpecOverrides(spec, r.plan->sets);
    EXPECT_EQ(next.parallel.dp, 2);
    EXPECT_EQ(next.launch.exclude_hosts, std::vector<std::string>{"node2"});
    EXPECT_EQ(next.train.global_batch, 12);
}

TEST(Continuation, DpShrinksUntilTheGlobalBatchSplitsIntoWholeMicroBatches) {
    // Five slots would hold dp=5, but 8 samples in micro-batches of 2 split over 4 or 2 or 1
    // replicas only.
    RunSpec spec = hostsSpec(6, 1, 8, 2);
    spec.launch.exclude_hosts = {"node9"};
    spec.launch.processes = 6;
    const ContinuationResult r = planContinuation(spec, {"node1:3", "node3:2"}, {"node2"});
    ASSERT_TRUE(r.plan) << r.error;
    EXPECT_EQ(r.plan->dp, 4);
    EXPECT_EQ(r.plan->sets, (std::vector<std::string>{"launch.exclude_hosts=[\"node9\", \"node2\"]", "parallel.dp=4",
                                                      "launch.processes=4"}));
}

TEST(Continuation, TooFewHostsOrSlotsAreNamed) {
    RunSpec spec = hostsSpec(2, 1, 4, 2);
    spec.launch.min_hosts = 2;
    ContinuationResult r = planContinuation(spec, {"node1:2"}, {"node2"});
    EXPECT_FALSE(r.plan);
    EXPECT_EQ(r.error, "1 host(s) answer, fewer than launch.min_hosts = 2");
    spec = hostsSpec(1, 4, 4, 2); // tp=4 needs four slots
    r = planContinuation(spec, {"node1:2", "node3:1"}, {"node2"});
    EXPECT_FALSE(r.plan);
    EXPECT_EQ(r.error, "the 3 slot(s) of the hosts that answer (node1, node3) hold no data-parallel replica of "
                       "parallel.tp * pp = 4 processes whose micro-batches of train.micro_batch = 2 make up "
                       "train.global_batch = 4");
}
