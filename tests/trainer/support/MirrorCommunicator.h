#pragma once

// A one-process communicator that acts as rank 0 of two identical replicas: a sum over the group
// doubles every value, an all-gather repeats the input, scalars come back as the group's sum
// (doubled) or, for max and min, unchanged. It records the dtype of every reduction and counts the
// all-gathers, so a test sees what went over the wire.

#include "trainer/comm/Communicator.h"

#include <stdexcept>
#include <vector>

namespace parallax::testing {

class MirrorCommunicator : public Communicator {
public:
    int rank() const override { return 0; }
    int size() const override { return 2; }
    std::string backend() const override { return "mirror"; }
    std::shared_ptr<Work> allReduceAsync(torch::Tensor& t, ReduceOp) override {
        types.push_back(t.scalar_type());
        reducedValues += t.numel();
        t.mul_(2);
        return std::make_shared<Done>();
    }
    std::shared_ptr<Work> reduceScatterAsync(torch::Tensor& out, const torch::Tensor& in, ReduceOp) override {
        types.push_back(in.scalar_type());
        reducedValues += in.numel();
        out.copy_(in.chunk(2)[0] * 2);
        return std::make_shared<Done>();
    }
    std::shared_ptr<Work> allGatherAsync(torch::Tensor& out, const torch::Tensor& in) override {
        ++gathers;
        out.copy_(torch::cat({in, in}));
        return std::make_shared<Done>();
    }
    std::shared_ptr<Work> broadcastAsync(torch::Tensor&, int) override { return std::make_shared<Done>(); }
    std::shared_ptr<Work> sendAsync(const torch::Tensor&, int, int) override { throw std::logic_error("no peers"); }
    std::shared_ptr<Work> recvAsync(torch::Tensor&, int, int) override { throw std::logic_error("no peers"); }
    void barrier() override {}
    double allReduceScalar(double value, ReduceOp op) override {
        return op == ReduceOp::Max || op == ReduceOp::Min ? value : 2 * value;
    }
    std::pair<double, int> maxLoc(double value) override { return {value, 0}; }

    std::vector<torch::ScalarType> types; // of each reduction's input
    int64_t reducedValues = 0;            // values handed to reductions
    int gathers = 0;

private:
    class Done : public Work {
    public:
        void wait() override {}
        bool test() override { return true; }
    };
};

} // namespace parallax::testing
