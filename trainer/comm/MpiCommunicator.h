#pragma once

#include "trainer/comm/Communicator.h"

#include <mpi.h>

namespace parallax {

// Communicator over an MPI communicator, for CPU tensors. Reductions support float32, float64,
// int32 and int64; copies (gather, broadcast, send/recv) any dtype.
class MpiCommunicator : public Communicator {
public:
    // Takes ownership of `comm` (freed on destruction unless it is MPI_COMM_WORLD).
    explicit MpiCommunicator(MPI_Comm comm);
    ~MpiCommunicator() override;
    MpiCommunicator(const MpiCommunicator&) = delete;
    MpiCommunicator& operator=(const MpiCommunicator&) = delete;

    int rank() const override { return m_rank; }
    int size() const override { return m_size; }
    std::string backend() const override { return "mpi"; }
    MPI_Comm comm() const { return m_comm; }

    std::shared_ptr<Work> allReduceAsync(torch::Tensor& tensor, ReduceOp op) override;
    std::shared_ptr<Work> reduceScatterAsync(torch::Tensor& output, const torch::Tensor& input, ReduceOp op) override;
    std::shared_ptr<Work> allGatherAsync(torch::Tensor& output, const torch::Tensor& input) override;
    std::shared_ptr<Work> broadcastAsync(torch::Tensor& tensor, int root) override;
    std::shared_ptr<Work> sendAsync(const torch::Tensor& tensor, int peer, int tag) override;
    std::shared_ptr<Work> recvAsync(torch::Tensor& tensor, int peer, int tag) override;
    void barrier() override;
    void progress() override;
    double allReduceScalar(double value, ReduceOp op) override;
    std::pair<double, int> maxLoc(double value) override;

    // Splits this communicator (MPI_Comm_split): processes with the same color form a group, ordered
    // by key.
    std::unique_ptr<MpiCommunicator> split(int color, int key) const;

private:
    std::shared_ptr<Work> issue(MPI_Request request, int64_t bytes, std::vector<torch::Tensor> keep);
    MPI_Comm m_comm;
    int m_rank = 0;
    int m_size = 1;
    int64_t m_issued = 0;
    std::vector<std::weak_ptr<Work>> m_pending;
};

} // namespace parallax
