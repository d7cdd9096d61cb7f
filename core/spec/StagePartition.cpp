#include "core/spec/StagePartition.h"

#include "core/spec/CheckedMath.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace parallax {

namespace {

// Groups: each block with the units that ride with it. Returns the first unit of each group.
std::vector<int> groupStarts(const std::vector<UnitInfo>& units) {
    int lastBlock = -1;
    for (int i = 0; i < static_cast<int>(units.size()); ++i)
        if (units[i].block) lastBlock = i;
    std::vector<int> starts;
    bool pendingLead = true; // units before a block join that block's group
    for (int i = 0; i < static_cast<int>(units.size()); ++i) {
        if (pendingLead) {
            starts.push_back(i);
            pendingLead = false;
        }
        // A non-block unit after a block leads the next group unless no block follows (a head).
        if (units[i].block && i < lastBlock) pendingLead = true;
    }
    return starts;
}

// The exact search below costs pieces x groups^2 steps: a fraction of a second up to this many,
// which covers every real model and layout (a 128-block model on 64 stages takes a million).
constexpr double kExactSearchSteps = double(1 << 24);

// Least possible largest piece, exactly: best[k][g] is the least largest piece cost splitting the
// first g groups into k pieces. Ties go to the earlier cut, so equal blocks split evenly from the
// front. Returns the group bounds (pieces + 1 entries).
std::vector<int> exactSplit(const std::vector<double>& prefix, int pieces) {
    const int groups = static_cast<int>(prefix.size()) - 1;
    const double inf = std::numeric_limits<double>::infinity();
    std::vector<std::vector<double>> best(pieces + 1, std::vector<double>(groups + 1, inf));
    std::vector<std::vector<int>> cut(pieces + 1, std::vector<int>(groups + 1, 0));
    best[0][0] = 0;
    for (int k = 1; k <= pieces; ++k) {
        for (int g = k; g <= groups; ++g) {
            for (int j = k - 1; j < g; ++j) {
                const double v = std::max(best[k - 1][j], prefix[g] - prefix[j]);
                if (v < best[k][g] - 1e-9 * std::max(1.0, v)) {
                    best[k][g] = v;
                    cut[k][g] = j;
                }
            }
        }
    }
    std::vector<int> bounds(pieces + 1, 0);
    bounds[pieces] = groups;
    for (int k = pieces; k > 0; --k) bounds[k - 1] = cut[k][static_cast<size_t>(bounds[k])];
    return bounds;
}

// Front-loaded pieces of cost at most `limit` (a piece may exceed it only with a single group),
// leaving at least one group for every later piece; the bounds, or an empty vector when more than
// `pieces` pieces would be needed.
std::vector<int> greedySplit(const std::vector<double>& prefix, int pieces, double limit) {
    const int groups = static_cast<int>(prefix.size()) - 1;
    std::vector<int> bounds = {0};
    int start = 0;
    for (int k = 0; k < pieces; ++k) {
        const int piecesAfter = pieces - k - 1;
        int end = start + 1;
        while (end < groups - piecesAfter && prefix[end + 1] - prefix[start] <= limit) ++end;
        if (k + 1 == pieces) end = groups;
        bounds.push_back(end);
        start = end;
    }
    for (int k = 0; k < pieces; ++k)
        if (bounds[k + 1] - bounds[k] > 1 && prefix[bounds[k + 1]] - prefix[bounds[k]] > limit) return {};
    return bounds;
}

// For layouts too large for the exact search: the least largest piece by bisection over the
// cost (every step a greedy pass over the groups), then the greedy split at that cost. The
// largest piece is within a relative 1e-12 of the least possible one; ties may cut elsewhere than
// the exact search would.
std::vector<int> bisectedSplit(const std::vector<double>& prefix, int pieces) {
    const int groups = static_cast<int>(prefix.size()) - 1;
    double low = 0, high = 0;
    for (int g = 0; g < groups; ++g) {
        low = std::max(low, prefix[g + 1] - prefix[g]);
        high += std::max(0.0, prefix[g + 1] - prefix[g]);
    }
    high = std::max(high, low);
    // A fixed number of halvings: a double has 53 bits, so 200 steps reach its resolution for any
    // range, and the loop ends whatever the costs are (NaN included).
    for (int step = 0; step < 200 && high - low > 1e-12 * std::max(1.0, high); ++step) {
        const double mid = low + (high - low) / 2;
        if (!greedySplit(prefix, pieces, mid).empty()) high = mid;
        else low = mid;
    }
    std::vector<int> bounds = greedySplit(prefix, pieces, high);
    if (bounds.empty()) {
        // Costs the bisection cannot order (NaN): equal numbers of groups per piece.
        bounds.assign(pieces + 1, 0);
        for (int k = 0; k <= pieces; ++k) bounds[k] = static_cast<int>(int64_t(groups) * k / pieces);
    }
    return bounds;
}

} // namespace

std::vector<int> partitionUnits(const std::vector<UnitInfo>& units, int pieces,
                                const std::vector<int64_t>& blocksPerPiece) {
    const int n = static_cast<int>(units.size());
    int blocks = 0;
    for (const UnitInfo& u : units) blocks += u.block ? 1 : 0;
    if (pieces < 1) throw std::invalid_argument("parallel.pp must be at least 1");
    if (blocks == 0 && pieces == 1) return {0, n}; // a model without blocks (the VAE): one piece, every unit
    if (blocks < pieces)
        throw std::invalid_argument("the model has " + std::to_string(blocks) + " transformer blocks for " +
                                    std::to_string(pieces) +
                                    " pipeline pieces (parallel.pp x parallel.virtual_stages); use fewer stages or "
                                    "more model.layers");
    const std::vector<int> starts = groupStarts(units);
    const int groups = static_cast<int>(starts.size());
    std::vector<int> bounds; // in groups
    if (!blocksPerPiece.empty()) {
        if (static_cast<int>(blocksPerPiece.size()) != pieces)
            throw std::invalid_argument("parallel.stage_layers has " + std::to_string(blocksPerPiece.size()) +
                                        " entries for " + std::to_string(pieces) + " pipeline pieces");
        int64_t sum = 0;
        for (int64_t b : blocksPerPiece) {
            if (b < 1) throw std::invalid_argument("parallel.stage_layers: every stage needs at least one block");
            sum = saturatingAdd(sum, b);
        }
        if (sum != groups)
            throw std::invalid_argument("parallel.stage_layers sums to " +
                                        (sum == std::numeric_limits<int64_t>::max() ? std::string("more than 2^63")
                                                                                    : std::to_string(sum)) +
                                        " blocks but the model has " + std::to_string(groups));
        // Every entry is at least 1 and they sum to `groups`, so each bound fits in an int.
        int at = 0;
        bounds.push_back(0);
        for (int64_t b : blocksPerPiece) {
            at += static_cast<int>(b);
            bounds.push_back(at);
        }
    } else {
        std::vector<double> groupCost(groups, 0.0);
        for (int g = 0; g < groups; ++g) {
            const int end = g + 1 < groups ? starts[g + 1] : n;
            for (int u = starts[g]; u < end; ++u) groupCost[g] += units[u].cost;
        }
        std::vector<double> prefix(groups + 1, 0.0);
        for (int g = 0; g < groups; ++g) prefix[g + 1] = prefix[g] + groupCost[g];
        const double steps = double(pieces) * double(groups) * double(groups);
        bounds = steps <= kExactSearchSteps ? exactSplit(prefix, pieces) : bisectedSplit(prefix, pieces);
    }
    std::vector<int> unitBounds;
    for (int b : bounds) unitBounds.push_back(b < groups ? starts[b] : n);
    return unitBounds;
}

} // namespace parallax
