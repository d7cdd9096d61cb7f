#pragma once

namespace parallax {

// Position of a rank in the dp x tp x pp mesh. Ranks are numbered with tp varying fastest, then dp,
// then pp: rank = (pp * dp_size + dp) * tp_size + tp. Tensor-parallel peers are therefore adjacent
// (one node, fastest links), pipeline stages the furthest apart. The one rule for the worker's
// groups, the supervisor's findings and the console's pictures.
struct MeshCoord {
    int dp = 0;
    int tp = 0;
    int pp = 0;
};

inline MeshCoord meshCoord(int rank, int dpSize, int tpSize, int ppSize) {
    (void)ppSize;
    MeshCoord c;
    c.tp = rank % tpSize;
    c.dp = (rank / tpSize) % dpSize;
    c.pp = rank / (tpSize * dpSize);
    return c;
}

inline int meshRank(const MeshCoord& c, int dpSize, int tpSize, int ppSize) {
    (void)ppSize;
    return (c.pp * dpSize + c.dp) * tpSize + c.tp;
}

} // namespace parallax
