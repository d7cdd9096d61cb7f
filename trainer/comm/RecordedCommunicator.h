#pragma once

#include "trainer/comm/Communicator.h"
#include "trainer/comm/FlightRecorder.h"
#include "trainer/comm/ProcessGroups.h"

#include <memory>
#include <string>

namespace parallax {

// A communicator that writes every operation it passes on into a FlightRecorder: when it was
// enqueued, when it was known complete (its wait() or test() returned), and how long the caller was
// blocked waiting for it. Applied from outside, to every group of a ProcessGroups bundle
// (recordCommunication), so that models and parallel wrappers see a Communicator as before.
class RecordedCommunicator : public Communicator {
public:
    RecordedCommunicator(std::shared_ptr<Communicator> inner, std::string group,
                         std::shared_ptr<FlightRecorder> recorder);

    int rank() const override { return m_inner->rank(); }
    int size() const override { return m_inner->size(); }
    std::string backend() const override { return m_inner->backend(); }

    std::shared_ptr<Work> allReduceAsync(torch::Tensor& tensor, ReduceOp op) override;
    std::shared_ptr<Work> reduceScatterAsync(torch::Tensor& output, const torch::Tensor& input, ReduceOp op) override;
    std::shared_ptr<Work> allGatherAsync(torch::Tensor& output, const torch::Tensor& input) override;
    std::shared_ptr<Work> broadcastAsync(torch::Tensor& tensor, int root) override;
    std::shared_ptr<Work> sendAsync(const torch::Tensor& tensor, int peer, int tag) override;
    std::shared_ptr<Work> recvAsync(torch::Tensor& tensor, int peer, int tag) override;
    void barrier() override;
    void progress() override { m_inner->progress(); }
    double allReduceScalar(double value, ReduceOp op) override;
    std::pair<double, int> maxLoc(double value) override;

    const Communicator& inner() const { return *m_inner; }

private:
    std::shared_ptr<Work> record(std::shared_ptr<Work> work, size_t handle);
    // A blocking operation: recorded, waited for, and its wait counted.
    template <typename F>
    auto blocking(const char* op, int64_t bytes, F&& call);

    std::shared_ptr<Communicator> m_inner;
    std::string m_group;
    std::shared_ptr<FlightRecorder> m_recorder;
};

// Wraps every communicator of `groups` (world, dp, tp, pp, mp; one wrapper per distinct
// communicator) so that their operations land in `recorder` under the group's name.
void recordCommunication(ProcessGroups& groups, const std::shared_ptr<FlightRecorder>& recorder);

} // namespace parallax
