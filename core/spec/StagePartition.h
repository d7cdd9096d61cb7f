#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace parallax {

// How a model's units are cut into pipeline pieces. Pieces are contiguous and each holds at least
// one transformer block; the other units ride with a block: an embedding (or a vision merger) with the
// block after it, the head with the block before it.
struct UnitInfo {
    bool block = false;
    double cost = 0; // forward FLOPs per sample
};

// First unit of each piece, plus the unit count at the end (pieces + 1 entries).
// `blocksPerPiece` (parallel.stage_layers) gives the split explicitly; empty: the contiguous split
// that minimizes the most expensive piece. Throws std::invalid_argument naming the field when the
// model has fewer blocks than pieces or the explicit split does not match the model.
std::vector<int> partitionUnits(const std::vector<UnitInfo>& units, int pieces,
                                const std::vector<int64_t>& blocksPerPiece = {});

} // namespace parallax
