#include "core/spec/StageBalanceKey.h"

#include <gtest/gtest.h>

namespace parallax {
namespace {

RunSpec pipeline() {
    RunSpec s;
    s.parallel.pp = 2;
    s.model.layers = 6;
    return s;
}

TEST(StageBalanceKey, TheSplitAndHowItWasChosenDoNotChangeIt) {
    const RunSpec base = pipeline();
    RunSpec split = base;
    split.parallel.stage_layers = {2, 4};
    split.parallel.stage_split = StageSplit::Profile;
    EXPECT_EQ(stageBalanceKey(split), stageBalanceKey(base));
    // Nor what a measurement does not depend on: steps, learning rate, the run's name.
    RunSpec other = base;
    other.train.steps = 999;
    other.train.lr = 1e-2;
    other.name = "renamed";
    EXPECT_EQ(stageBalanceKey(other), stageBalanceKey(base));
}

TEST(StageBalanceKey, TheModelLayoutMicroBatchAndDevicesDo) {
    const RunSpec base = pipeline();
    const std::string key = stageBalanceKey(base);
    RunSpec model = base;
    model.model.dim = 256;
    EXPECT_NE(stageBalanceKey(model), key);
    RunSpec layout = base;
    layout.parallel.pp = 3;
    EXPECT_NE(stageBalanceKey(layout), key);
    RunSpec micro = base;
    micro.train.micro_batch = base.train.micro_batch + 1;
    EXPECT_NE(stageBalanceKey(micro), key);
    RunSpec device = base;
    device.launch.device = Device::Cuda;
    EXPECT_NE(stageBalanceKey(device), key);
    RunSpec threads = base;
    threads.launch.threads_per_rank = 3;
    EXPECT_NE(stageBalanceKey(threads), key);
}

} // namespace
} // namespace parallax
