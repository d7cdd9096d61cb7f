#include "core/spec/StagePartition.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <random>

namespace parallax {
namespace {

// An embedding, `costs.size()` blocks and a head, the way the models lay out their units.
std::vector<UnitInfo> model(const std::vector<double>& costs) {
    std::vector<UnitInfo> units = {{false, 0.0}};
    for (double c : costs) units.push_back({true, c});
    units.push_back({false, 0.0});
    return units;
}

double largestPiece(const std::vector<UnitInfo>& units, const std::vector<int>& bounds) {
    double largest = 0;
    for (size_t k = 0; k + 1 < bounds.size(); ++k) {
        double cost = 0;
        for (int u = bounds[k]; u < bounds[k + 1]; ++u) cost += units[static_cast<size_t>(u)].cost;
        largest = std::max(largest, cost);
    }
    return largest;
}

// The least possible largest piece, by the textbook search over every cut.
double optimum(const std::vector<double>& costs, int pieces) {
    const size_t n = costs.size();
    std::vector<double> prefix(n + 1, 0.0);
    for (size_t i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + costs[i];
    const double inf = std::numeric_limits<double>::infinity();
    std::vector<double> previous(n + 1, inf), current(n + 1, inf);
    previous[0] = 0;
    for (int k = 1; k <= pieces; ++k) {
        std::fill(current.begin(), current.end(), inf);
        for (size_t g = static_cast<size_t>(k); g <= n; ++g)
            for (size_t j = static_cast<size_t>(k - 1); j < g; ++j)
                current[g] = std::min(current[g], std::max(previous[j], prefix[g] - prefix[j]));
        std::swap(previous, current);
    }
    return previous[n];
}

void expectValidSplit(const std::vector<UnitInfo>& units, const std::vector<int>& bounds, int pieces) {
    ASSERT_EQ(bounds.size(), static_cast<size_t>(pieces) + 1);
    EXPECT_EQ(bounds.front(), 0);
    EXPECT_EQ(bounds.back(), static_cast<int>(units.size()));
    for (size_t k = 0; k + 1 < bounds.size(); ++k) {
        int blocks = 0;
        for (int u = bounds[k]; u < bounds[k + 1]; ++u) blocks += units[static_cast<size_t>(u)].block ? 1 : 0;
        EXPECT_GE(blocks, 1) << "piece " << k;
    }
}

TEST(StagePartition, SmallLayoutsGetTheLeastLargestPiece) {
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> cost(1.0, 100.0);
    for (int trial = 0; trial < 200; ++trial) {
        const int n = 1 + static_cast<int>(rng() % 30);
        const int pieces = 1 + static_cast<int>(rng() % static_cast<uint64_t>(std::min(n, 10)));
        std::vector<double> costs(static_cast<size_t>(n));
        for (double& c : costs) c = cost(rng);
        const auto units = model(costs);
        const auto bounds = partitionUnits(units, pieces);
        expectValidSplit(units, bounds, pieces);
        EXPECT_NEAR(largestPiece(units, bounds), optimum(costs, pieces), 1e-9 * optimum(costs, pieces));
    }
}

// Past the exact search's size the split is found by bisection: as good, and at once.
TEST(StagePartition, LargeLayoutsAreSplitAtOnce) {
    std::mt19937_64 rng(11);
    std::uniform_real_distribution<double> cost(1.0, 100.0);
    std::vector<double> costs(300);
    for (double& c : costs) c = cost(rng);
    const auto units = model(costs);
    const auto bounds = partitionUnits(units, 200); // 200 x 300^2 steps: beyond the exact search
    expectValidSplit(units, bounds, 200);
    EXPECT_LE(largestPiece(units, bounds), optimum(costs, 200) * (1 + 1e-9));

    const auto start = std::chrono::steady_clock::now();
    const auto equal = model(std::vector<double>(16384, 1.0));
    const auto even = partitionUnits(equal, 128);
    expectValidSplit(equal, even, 128);
    EXPECT_DOUBLE_EQ(largestPiece(equal, even), 128.0);
    const auto many = partitionUnits(equal, 16384);
    expectValidSplit(equal, many, 16384);
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 1.0);
}

TEST(StagePartition, ExplicitBlocksThatOverflowTheirSum) {
    const auto units = model({1, 1});
    try {
        partitionUnits(units, 2, {std::numeric_limits<int64_t>::max(), 1});
        FAIL();
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("sums to more than 2^63 blocks"), std::string::npos) << e.what();
    }
    EXPECT_EQ(partitionUnits(units, 2, {1, 1}), (std::vector<int>{0, 2, 4}));
}

} // namespace
} // namespace parallax
