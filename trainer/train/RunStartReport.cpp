#include "trainer/train/RunStartReport.h"

#include "core/util/HostName.h"
#include "trainer/train/RankExchange.h"

#include <cstdlib>

namespace parallax {

double reportRunStart(const RunSpec& spec, ProcessGroups& groups, const RunFigures& figures, TelemetryEmitter& out) {
    const auto hosts = gatherHosts(*groups.world);
    const auto pids = gatherPids(*groups.world);
    const auto offsets = alignClocks(*groups.world);
    const double clockOffset = offsets.at(static_cast<size_t>(groups.worldRank()));
    const torch::Device& device = figures.device;
    const std::string where = "rank " + std::to_string(groups.worldRank()) + " on " + hostName() + ": " +
                              (device.is_cuda() ? "cuda:" + std::to_string(device.index()) : std::string("cpu")) +
                              ", " + std::to_string(torch::get_num_threads()) + " thread(s), dp " +
                              std::to_string(groups.coord.dp) + " tp " + std::to_string(groups.coord.tp) + " pp " +
                              std::to_string(groups.coord.pp) + ", " + figures.dataset;
    if (groups.worldRank() != 0) {
        out.info(where);
        return clockOffset;
    }
    RunStartEvent e;
    e.world = groups.world->size();
    e.dp = groups.dpSize;
    e.tp = groups.tpSize;
    e.pp = groups.ppSize;
    e.zero = static_cast<int>(spec.parallel.zero);
    e.schedule = spec.parallel.schedule.name();
    e.params = figures.params;
    e.flops_per_token = figures.flopsPerToken;
    e.peak_flops = figures.peakFlops;
    e.device = choiceName(figures.device.is_cuda() ? Device::Cuda : Device::Cpu);
    e.hosts = hosts;
    e.devices.assign(hosts.size(), e.device);
    e.clock_offsets = offsets;
    e.pids = pids;
    if (const char* job = std::getenv("SLURM_JOB_ID")) e.slurm_job = job;
    if (const char* nodes = std::getenv("SLURM_JOB_NODELIST")) e.slurm_nodes = nodes;
    e.start_step = figures.startStep;
    e.t = TelemetryEmitter::now();
    out.emit(e);
    out.info(where);
    return clockOffset;
}

} // namespace parallax
