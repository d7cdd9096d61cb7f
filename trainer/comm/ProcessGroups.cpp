#include "trainer/comm/ProcessGroups.h"

#include "trainer/comm/MpiCommunicator.h"
#if PARALLAX_WITH_CUDA
#include "trainer/comm/NcclCommunicator.h"
#endif

#include <stdexcept>

namespace parallax {

ProcessGroups ProcessGroups::createMpi(int dpSize, int tpSize, int ppSize) {
    auto world = std::make_shared<MpiCommunicator>(MPI_COMM_WORLD);
    if (world->size() != dpSize * tpSize * ppSize)
        throw std::invalid_argument("parallel: dp*tp*pp = " + std::to_string(dpSize * tpSize * ppSize) +
                                    " but the launcher started " + std::to_string(world->size()) +
                                    " processes; set launch.processes to dp*tp*pp or change the layout");
    ProcessGroups g;
    g.dpSize = dpSize;
    g.tpSize = tpSize;
    g.ppSize = ppSize;
    g.coord = meshCoord(world->rank(), dpSize, tpSize, ppSize);
    const MeshCoord& c = g.coord;
    // Colors identify the group, keys order the ranks inside it.
    g.dp = world->split(c.pp * tpSize + c.tp, c.dp);
    g.tp = world->split(c.pp * dpSize + c.dp, c.tp);
    g.pp = world->split(c.dp * tpSize + c.tp, c.pp);
    g.mp = world->split(c.dp, c.pp * tpSize + c.tp);
    g.world = world;
    return g;
}

#if PARALLAX_WITH_CUDA
ProcessGroups ProcessGroups::createNccl(int dpSize, int tpSize, int ppSize, int device) {
    auto worldMpi = std::make_unique<MpiCommunicator>(MPI_COMM_WORLD);
    if (worldMpi->size() != dpSize * tpSize * ppSize)
        throw std::invalid_argument("parallel: dp*tp*pp = " + std::to_string(dpSize * tpSize * ppSize) +
                                    " but the launcher started " + std::to_string(worldMpi->size()) +
                                    " processes; set launch.processes to dp*tp*pp or change the layout");
    const torch::Device gpu(torch::kCUDA, static_cast<c10::DeviceIndex>(device));
    ProcessGroups g;
    g.dpSize = dpSize;
    g.tpSize = tpSize;
    g.ppSize = ppSize;
    g.coord = meshCoord(worldMpi->rank(), dpSize, tpSize, ppSize);
    const MeshCoord& c = g.coord;
    // The same colors and keys as createMpi. Every rank creates the groups in the same order, and
    // the groups of one kind are disjoint, so each NCCL initialization meets all of its members.
    auto dpMpi = worldMpi->split(c.pp * tpSize + c.tp, c.dp);
    auto tpMpi = worldMpi->split(c.pp * dpSize + c.dp, c.tp);
    auto ppMpi = worldMpi->split(c.dp * tpSize + c.tp, c.pp);
    auto mpMpi = worldMpi->split(c.dp, c.pp * tpSize + c.tp);
    g.world = std::make_shared<NcclCommunicator>(std::move(worldMpi), gpu);
    g.dp = std::make_shared<NcclCommunicator>(std::move(dpMpi), gpu);
    g.tp = std::make_shared<NcclCommunicator>(std::move(tpMpi), gpu);
    NcclOptions pipeline;
    pipeline.p2pChannels = true;
    g.pp = std::make_shared<NcclCommunicator>(std::move(ppMpi), gpu, pipeline);
    g.mp = std::make_shared<NcclCommunicator>(std::move(mpMpi), gpu);
    return g;
}
#endif

} // namespace parallax
