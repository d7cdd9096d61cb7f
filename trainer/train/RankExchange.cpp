#include "trainer/train/RankExchange.h"

#include "core/telemetry/ClockSync.h"
#include "core/util/HostName.h"
#include "trainer/train/TelemetryEmitter.h"

#include <algorithm>
#include <cstring>
#include <unistd.h>

namespace parallax {

std::string firstFailure(const std::string& failure, Communicator& world) {
    const int none = world.size();
    const int first = static_cast<int>(
        world.allReduceScalar(failure.empty() ? static_cast<double>(none) : world.rank(), ReduceOp::Min));
    if (first >= none) return "";
    const bool mine = world.rank() == first;
    const auto length = static_cast<int64_t>(
        world.allReduceScalar(mine ? static_cast<double>(failure.size()) : 0.0, ReduceOp::Max));
    // Host memory: CPU tensors go over MPI on every communicator.
    auto text = torch::zeros({std::max<int64_t>(length, 1)}, torch::kUInt8);
    if (mine) std::memcpy(text.data_ptr(), failure.data(), failure.size());
    world.broadcast(text, first);
    return std::string(reinterpret_cast<const char*>(text.data_ptr<uint8_t>()), static_cast<size_t>(length));
}

std::vector<std::string> gatherHosts(Communicator& world) {
    constexpr int64_t kWidth = 256;
    auto mine = torch::zeros({kWidth}, torch::kUInt8);
    const std::string host = hostName();
    std::memcpy(mine.data_ptr(), host.data(), std::min<size_t>(host.size(), kWidth - 1));
    auto all = torch::zeros({kWidth * world.size()}, torch::kUInt8);
    world.allGather(all, mine);
    std::vector<std::string> hosts;
    for (int r = 0; r < world.size(); ++r)
        hosts.emplace_back(reinterpret_cast<const char*>(all.data_ptr<uint8_t>() + r * kWidth));
    return hosts;
}

std::vector<int64_t> gatherPids(Communicator& world) {
    auto mine = torch::full({1}, static_cast<int64_t>(::getpid()), torch::kLong);
    auto all = torch::zeros({world.size()}, torch::kLong);
    world.allGather(all, mine);
    return std::vector<int64_t>(all.data_ptr<int64_t>(), all.data_ptr<int64_t>() + world.size());
}

std::vector<double> alignClocks(Communicator& world) {
    constexpr int kRounds = 8;
    std::vector<ClockSample> samples;
    auto buf = torch::zeros({2}, torch::kDouble);
    for (int r = 1; r < world.size(); ++r) {
        for (int k = 0; k < kRounds; ++k) {
            if (world.rank() == r) {
                ClockSample s;
                s.t0 = TelemetryEmitter::now();
                world.send(buf, 0, 7001);
                world.recv(buf, 0, 7002);
                s.t3 = TelemetryEmitter::now();
                s.t1 = buf[0].item<double>();
                s.t2 = buf[1].item<double>();
                samples.push_back(s);
            } else if (world.rank() == 0) {
                world.recv(buf, r, 7001);
                buf[0] = TelemetryEmitter::now();
                buf[1] = TelemetryEmitter::now();
                world.send(buf, r, 7002);
            }
        }
    }
    const double mine = world.rank() == 0 ? 0.0 : -estimateClockOffset(samples).offset;
    auto all = torch::zeros({world.size()}, torch::kDouble);
    world.allGather(all, torch::full({1}, mine, torch::kDouble));
    return std::vector<double>(all.data_ptr<double>(), all.data_ptr<double>() + world.size());
}

} // namespace parallax
