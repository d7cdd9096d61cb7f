// Every rank logs, at the end of a run, where its steady steps went: forward and backward, the wait
// for gradient reductions after backward, the gradient norm and its sum over the stages and shards,
// the optimizer, loss reduction; the parts add up to the step.

#include "tests/trainer/support/SpecText.h"
#include "tests/trainer/support/WorkerRun.h"

#include <gtest/gtest.h>

#include "core/util/Files.h"

#include <regex>
#include <set>

using namespace parallax;
using namespace parallax::testing;

namespace {

TEST(StepBreakdown, EveryRankLogsThePartsOfItsSteadySteps) {
    TinySpec spec;
    spec.kind = "gpt";
    spec.steps = 8;
    spec.dp = 2;
    TempDir tmp;
    const WorkerRun run = runWorker(spec.toToml(), 2, tmp.path() + "/run");
    ASSERT_EQ(run.exitCode, 0) << run.output;
    const std::regex line(
        R"(rank (\d), steps 4 to 7, medians of each part of the step \(host clock\): step ([0-9.]+) ms; )"
        R"(forward and backward ([0-9.]+), waiting for gradient reductions after backward ([0-9.]+), )"
        R"(gradient norm and its sum over the stages and shards ([0-9.]+), optimizer ([0-9.]+), )"
        R"(loss reduction ([0-9.]+) ms)");
    std::set<int> ranks;
    for (const std::string& log : run.logs) {
        std::smatch m;
        if (!std::regex_search(log, m, line)) continue;
        ranks.insert(std::stoi(m[1]));
        const double step = std::stod(m[2]), compute = std::stod(m[3]);
        EXPECT_GT(compute, 0.0) << log;
        EXPECT_LE(compute, step + 1e-6) << log;
        // Medians of each part need not add up exactly to the median step; within a step they do.
        double parts = 0;
        for (int i = 3; i <= 7; ++i) parts += std::stod(m[i]);
        EXPECT_GT(parts, 0.5 * step) << log;
    }
    EXPECT_EQ(ranks, (std::set<int>{0, 1})) << run.output;
}

} // namespace
