#pragma once

#include "trainer/comm/Communicator.h"
#include "trainer/comm/MpiCommunicator.h"

#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAStream.h>
#include <nccl.h>

#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace parallax {

struct NcclOptions {
    // Point-to-point traffic to and from each ring neighbour (rank +- 1 modulo the size) gets its own
    // two-rank NCCL communicator and stream per direction. NCCL matches sends and receives only by
    // order per communicator, and the kernels of one communicator run one after another, so with a
    // single communicator a rank that sends to its neighbour while that neighbour sends back would
    // wait for a receive queued behind its own send. One communicator per direction leaves exactly
    // the ordering MPI without tags gives: the k-th send from a to b meets b's k-th receive from a.
    // The pipeline group wants this; the other groups do collectives only.
    bool p2pChannels = false;
};

// Communicator over NCCL for CUDA tensors on one device, bootstrapped over the group's MPI
// communicator (which it owns and also uses for host scalars, barriers and CPU tensors).
//
// Streams: every operation runs on a stream of the communicator's own, after the work already
// queued on the caller's current stream (an event recorded there, waited on by the communication
// stream). Work::wait() makes the caller's *current* stream wait for the operation; it does not
// block the host, as in PyTorch's ProcessGroupNCCL. Reading a result on the host after wait() (for
// example .item() or a copy to the CPU) synchronizes as usual; synchronize() blocks the host until
// everything issued has completed.
//
// Memory: the tensors of an operation are recorded on the communication stream with the caching
// allocator, so freeing them before the operation has completed is safe (their memory is reused
// only afterwards). Inputs must not be written before wait(), as with MPI.
//
// Point-to-point: NCCL ignores tags; sends and receives between two ranks meet in the order they
// were issued. Code that uses tags to receive messages in another order than they were sent does
// not work here. PipelineEngine's messages (a header, then each tensor, all on the GPU) are issued
// in the same order by sender and receiver, and its schedules send and receive in the same order
// per pair of ranks (tests/trainer/gpu/PipelineMessageOrderTest checks every schedule).
//
// Dtypes: reductions in float32, bfloat16, float16, float64, int32, int64, uint8 (and int8);
// copies (gather, broadcast, send/recv) of any dtype. CPU tensors are passed to the MPI
// communicator of the same group, so code written for CPU groups (host names, clocks) keeps working.
// A group of one rank needs no NCCL: its collectives are copies on the current stream.
class NcclCommunicator : public Communicator {
public:
    // Collective over `mpi`'s group: every member calls it with its own device.
    NcclCommunicator(std::unique_ptr<MpiCommunicator> mpi, torch::Device device, NcclOptions options = {});
    ~NcclCommunicator() override;
    NcclCommunicator(const NcclCommunicator&) = delete;
    NcclCommunicator& operator=(const NcclCommunicator&) = delete;

    int rank() const override { return m_rank; }
    int size() const override { return m_size; }
    std::string backend() const override { return "nccl"; }
    torch::Device device() const { return m_device; }
    MpiCommunicator& mpi() { return *m_mpi; }

    std::shared_ptr<Work> allReduceAsync(torch::Tensor& tensor, ReduceOp op) override;
    std::shared_ptr<Work> reduceScatterAsync(torch::Tensor& output, const torch::Tensor& input, ReduceOp op) override;
    std::shared_ptr<Work> allGatherAsync(torch::Tensor& output, const torch::Tensor& input) override;
    std::shared_ptr<Work> broadcastAsync(torch::Tensor& tensor, int root) override;
    std::shared_ptr<Work> sendAsync(const torch::Tensor& tensor, int peer, int tag) override;
    std::shared_ptr<Work> recvAsync(torch::Tensor& tensor, int peer, int tag) override;
    // Waits (host) for this rank's queued GPU work, then meets the other ranks (MPI).
    void barrier() override;
    // Retires completed operations into stats().last_seq and raises NCCL's asynchronous errors.
    void progress() override;
    // Host scalars go over MPI: no kernel, no device synchronization.
    double allReduceScalar(double value, ReduceOp op) override;
    std::pair<double, int> maxLoc(double value) override;

    // Blocks the host until every operation issued on this communicator has completed.
    void synchronize();
    // True when point-to-point traffic with `peer` in that direction has its own channel.
    bool hasChannel(int peer, bool sending) const;
    // Operations issued but not yet seen complete (by progress(), test() or synchronize()).
    size_t inFlight() const;

private:
    // One NCCL communicator with the stream its operations run on.
    struct Lane {
        ncclComm_t comm = nullptr;
        cudaStream_t raw = nullptr;
        int peerRankInLane = 0; // for channels: the other rank's index (0 or 1) in the two-rank comm
        std::unique_ptr<at::cuda::CUDAEvent> ready; // reused: marks the caller's stream position
    };
    struct Pending {
        int64_t seq;
        std::shared_ptr<at::cuda::CUDAEvent> done;
    };

    void createLane(Lane& lane, int nranks, int rankInLane, const ncclUniqueId& id);
    void createChannels();
    void connectLane(Lane& lane, bool sending);
    // `abort`: drop queued operations (ncclCommAbort) instead of waiting for them.
    void destroyLane(Lane& lane, bool abort) noexcept;
    c10::cuda::CUDAStream laneStream(const Lane& lane) const;
    Lane& laneFor(int peer, bool sending);
    void checkPeer(int peer, const char* what) const;
    void requireDevice(const torch::Tensor& t, const char* what) const;
    // Orders `lane` after the caller's stream, protects the tensors' memory, runs `op` (which issues
    // the NCCL call) and returns the Work completing when it has.
    template <class Op>
    std::shared_ptr<Work> enqueue(Lane& lane, std::initializer_list<const torch::Tensor*> tensors, int64_t bytes,
                                  Op&& op);
    std::shared_ptr<Work> completedLocally(int64_t bytes);
    void retireCompleted();

    std::unique_ptr<MpiCommunicator> m_mpi;
    torch::Device m_device;
    int m_rank = 0;
    int m_size = 1;
    Lane m_main;
    std::vector<Lane> m_channels;                  // creation order, identical on every rank
    std::map<std::pair<int, bool>, size_t> m_channelOf; // (peer, sending) -> index in m_channels
    mutable std::mutex m_mutex;                    // pending list and counters (hooks run on autograd threads)
    std::deque<Pending> m_pending;
    int64_t m_issued = 0;
};

} // namespace parallax
