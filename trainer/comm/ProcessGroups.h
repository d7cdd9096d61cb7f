#pragma once

#include "core/spec/MeshCoord.h"
#include "trainer/comm/Communicator.h"

#include <memory>

namespace parallax {



// The communicators of one rank. dp: the ranks holding the same model shard (same tp, pp);
// tp: the ranks of one tensor-parallel group (same dp, pp); pp: one pipeline (same dp, tp);
// mp: every model-parallel peer of one replica (same dp), for global gradient norms.
struct ProcessGroups {
    std::shared_ptr<Communicator> world;
    std::shared_ptr<Communicator> dp;
    std::shared_ptr<Communicator> tp;
    std::shared_ptr<Communicator> pp;
    std::shared_ptr<Communicator> mp;
    int dpSize = 1, tpSize = 1, ppSize = 1;
    MeshCoord coord;

    int worldRank() const { return world->rank(); }
    bool isFirstStage() const { return coord.pp == 0; }
    bool isLastStage() const { return coord.pp == ppSize - 1; }
    // World rank of the same (dp, tp) position on pipeline stage `stage`.
    int stageRank(int stage) const { return meshRank({coord.dp, coord.tp, stage}, dpSize, tpSize, ppSize); }

    // Builds every group from MPI_COMM_WORLD with MPI_Comm_split. Throws when the world size is not
    // dp * tp * pp.
    static ProcessGroups createMpi(int dpSize, int tpSize, int ppSize);

#if PARALLAX_WITH_CUDA
    // The same groups with NCCL communicators on CUDA device `device` (this rank's GPU, already
    // selected): each group's MPI communicator (MPI_Comm_split, as createMpi) carries the NCCL id from
    // the group's rank 0 to the others, then ncclCommInitRank. The pipeline group gets a channel per
    // direction to each neighbouring stage (see NcclOptions). CPU tensors still go over MPI.
    static ProcessGroups createNccl(int dpSize, int tpSize, int ppSize, int device);
#endif
};

} // namespace parallax
