#include "core/spec/StagePartition.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace parallax {

namespace {

// Groups: each block with the units that ride with it. Returns the first unit of each group.
std::vector<int> groupStarts(const std::vector<UnitInfo>& units) {
    std::vector<int> starts;
    bool pendingLead = true; // units before a block join that block's group
    for (int i = 0; i < static_cast<int>(units.size()); ++i) {
        if (pendingLead) {
            starts.push_back(i);
            pendingLead = false;
        }
        if (units[i].block) {
            // A non-block unit after a block leads the next group unless no block follows (a head).
            bool blockFollows = false;
            for (size_t j = static_cast<size_t>(i) + 1; j < units.size(); ++j)
                if (units[j].block) blockFollows = true;
            if (blockFollows) pendingLead = true;
        }
    }
    return starts;
}

} // namespace

std::vector<int> partitionUnits(const std::vector<UnitInfo>& units, int pieces,
                                const std::vector<int64_t>& blocksPerPiece) {
    const int n = static_cast<int>(units.size());
    int blocks = 0;
    for (const UnitInfo& u : units) blocks += u.block ? 1 : 0;
    if (pieces < 1) throw std::invalid_argument("parallel.pp must be at least 1");
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
        int64_t at = 0;
        bounds.push_back(0);
        for (int64_t b : blocksPerPiece) {
            if (b < 1) throw std::invalid_argument("parallel.stage_layers: every stage needs at least one block");
            at += b;
            bounds.push_back(static_cast<int>(at));
        }
        if (at != groups)
            throw std::invalid_argument("parallel.stage_layers sums to " + std::to_string(at) +
                                        " blocks but the model has " + std::to_string(groups));
    } else {
        std::vector<double> groupCost(groups, 0.0);
        for (int g = 0; g < groups; ++g) {
            const int end = g + 1 < groups ? starts[g + 1] : n;
            for (int u = starts[g]; u < end; ++u) groupCost[g] += units[u].cost;
        }
        std::vector<double> prefix(groups + 1, 0.0);
        for (int g = 0; g < groups; ++g) prefix[g + 1] = prefix[g] + groupCost[g];
        // best[k][g]: least possible largest piece cost splitting the first g groups into k pieces.
        const double inf = std::numeric_limits<double>::infinity();
        std::vector<std::vector<double>> best(pieces + 1, std::vector<double>(groups + 1, inf));
        std::vector<std::vector<int>> cut(pieces + 1, std::vector<int>(groups + 1, 0));
        best[0][0] = 0;
        for (int k = 1; k <= pieces; ++k) {
            for (int g = k; g <= groups; ++g) {
                for (int j = k - 1; j < g; ++j) {
                    const double v = std::max(best[k - 1][j], prefix[g] - prefix[j]);
                    // Ties go to the earlier cut, so equal blocks split evenly from the front.
                    if (v < best[k][g] - 1e-9 * std::max(1.0, v)) {
                        best[k][g] = v;
                        cut[k][g] = j;
                    }
                }
            }
        }
        bounds.assign(pieces + 1, 0);
        bounds[pieces] = groups;
        for (int k = pieces; k > 0; --k) bounds[k - 1] = cut[k][static_cast<size_t>(bounds[k])];
    }
    std::vector<int> unitBounds;
    for (int b : bounds) unitBounds.push_back(b < groups ? starts[b] : n);
    return unitBounds;
}

} // namespace parallax
