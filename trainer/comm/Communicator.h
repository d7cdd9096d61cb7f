#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <string>

namespace parallax {

enum class ReduceOp { Sum, Max, Min };

// A pending communication. wait() blocks until it completed and its buffers may be reused.
class Work {
public:
    virtual ~Work() = default;
    virtual void wait() = 0;
    virtual bool test() = 0; // true when complete; also drives progress
    // True when wait() only orders the caller's stream after the operation (NCCL on a GPU): the
    // operation completes on the device later, when test() says so.
    virtual bool completesOnDevice() const { return false; }
};

// Counters a communicator keeps for `comm` telemetry.
struct CommStats {
    int64_t collectives = 0; // operations issued
    int64_t bytes = 0;       // payload bytes issued
    int64_t last_seq = 0;    // sequence number of the last operation known complete
};

// Collectives and point-to-point over one group of processes. Tensors must be contiguous and live on
// the communicator's device. Implementations: MpiCommunicator (CPU tensors), NcclCommunicator (CUDA).
// Communicators are passed explicitly (ProcessGroups), never global.
class Communicator {
public:
    virtual ~Communicator() = default;
    virtual int rank() const = 0;
    virtual int size() const = 0;
    virtual std::string backend() const = 0;

    virtual std::shared_ptr<Work> allReduceAsync(torch::Tensor& tensor, ReduceOp op = ReduceOp::Sum) = 0;
    // `input` holds size() equal chunks; chunk i reduced over the group lands in rank i's `output`.
    virtual std::shared_ptr<Work> reduceScatterAsync(torch::Tensor& output, const torch::Tensor& input,
                                                     ReduceOp op = ReduceOp::Sum) = 0;
    // `output` receives size() chunks, chunk i being rank i's `input`.
    virtual std::shared_ptr<Work> allGatherAsync(torch::Tensor& output, const torch::Tensor& input) = 0;
    virtual std::shared_ptr<Work> broadcastAsync(torch::Tensor& tensor, int root) = 0;
    virtual std::shared_ptr<Work> sendAsync(const torch::Tensor& tensor, int peer, int tag) = 0;
    virtual std::shared_ptr<Work> recvAsync(torch::Tensor& tensor, int peer, int tag) = 0;
    virtual void barrier() = 0;
    // Lets outstanding non-blocking operations advance (MPI progresses only inside MPI calls).
    virtual void progress() {}

    void allReduce(torch::Tensor& tensor, ReduceOp op = ReduceOp::Sum) { allReduceAsync(tensor, op)->wait(); }
    void reduceScatter(torch::Tensor& output, const torch::Tensor& input, ReduceOp op = ReduceOp::Sum) {
        reduceScatterAsync(output, input, op)->wait();
    }
    void allGather(torch::Tensor& output, const torch::Tensor& input) { allGatherAsync(output, input)->wait(); }
    void broadcast(torch::Tensor& tensor, int root) { broadcastAsync(tensor, root)->wait(); }
    void send(const torch::Tensor& tensor, int peer, int tag) { sendAsync(tensor, peer, tag)->wait(); }
    void recv(torch::Tensor& tensor, int peer, int tag) { recvAsync(tensor, peer, tag)->wait(); }

    // Scalar conveniences (on the host), used for step statistics and stop agreement.
    virtual double allReduceScalar(double value, ReduceOp op) = 0;
    // Returns {max value, rank holding it} over the group.
    virtual std::pair<double, int> maxLoc(double value) = 0;

    const CommStats& stats() const { return m_stats; }

protected:
    CommStats m_stats;
};

} // namespace parallax
