#include "trainer/comm/FlightRecorder.h"

#include <gtest/gtest.h>

#include <atomic>

namespace parallax {
namespace {

// An operation that completes on the device (NCCL) is pending until its probe says it is done,
// however early the training thread's wait() returned.
TEST(FlightRecorder, AnOperationOnTheDeviceCompletesWhenItsProbeSaysSo) {
    FlightRecorder r;
    const size_t first = r.enqueue("dp", "all_reduce", 1024);
    const size_t second = r.enqueue("dp", "all_reduce", 2048);
    std::atomic<bool> firstDone{false}, secondDone{false};
    r.completeWhen(first, [&] { return firstDone.load(); });
    r.completeWhen(second, [&] { return secondDone.load(); });
    r.pollCompletions();
    FlightRecorder::Snapshot s = r.snapshot();
    ASSERT_EQ(s.groups.size(), 1u);
    EXPECT_EQ(s.groups[0].enqueued, 2);
    EXPECT_EQ(s.groups[0].completed, 0);
    EXPECT_EQ(s.pending.seq, 1);
    EXPECT_EQ(s.pending.op, "all_reduce");

    firstDone = true;
    r.pollCompletions();
    s = r.snapshot();
    EXPECT_EQ(s.groups[0].completed, 1);
    EXPECT_EQ(s.pending.seq, 2) << "the second is still on the device";

    secondDone = true;
    r.pollCompletions();
    s = r.snapshot();
    EXPECT_EQ(s.groups[0].completed, 2);
    EXPECT_TRUE(s.pending.op.empty());
}

// Without anyone polling, the probes do not pile up past half the ring (where their operations
// still are, so completing them is recorded).
TEST(FlightRecorder, ProbesBeyondTheRingCountAsComplete) {
    FlightRecorder r(8);
    for (int i = 0; i < 20; ++i) r.completeWhen(r.enqueue("tp", "all_gather", 64), [] { return false; });
    const FlightRecorder::Snapshot s = r.snapshot();
    EXPECT_EQ(s.groups[0].enqueued, 20);
    EXPECT_EQ(s.groups[0].completed, 16) << "all but the 4 newest were let go";
}

} // namespace
} // namespace parallax
