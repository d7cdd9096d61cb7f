#include "trainer/comm/ProcessGroups.h"

#include "trainer/comm/MpiCommunicator.h"

#include <stdexcept>

namespace parallax {

MeshCoord meshCoord(int rank, int dpSize, int tpSize, int ppSize) {
    MeshCoord c;
    c.tp = rank % tpSize;
    c.dp = (rank / tpSize) % dpSize;
    c.pp = rank / (tpSize * dpSize);
    return c;
}

int meshRank(const MeshCoord& c, int dpSize, int tpSize, int ppSize) {
    return (c.pp * dpSize + c.dp) * tpSize + c.tp;
}

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

} // namespace parallax
