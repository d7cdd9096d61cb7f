#include "trainer/comm/NcclCommunicator.h"

#include "trainer/comm/MpiCheck.h"
#include "trainer/comm/NcclCheck.h"

#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>

#include <algorithm>
#include <exception>
#include <stdexcept>

namespace parallax {

namespace {

// Tag of the MPI message that carries a channel's NCCL id from its sender to its receiver.
constexpr int kChannelIdTag = 31001;
// Past this many unretired operations the whole list is scanned instead of only its front.
constexpr size_t kFullScanThreshold = 4096;

ncclDataType_t reduceType(const torch::Tensor& t) {
    switch (t.scalar_type()) {
    case torch::kFloat: return ncclFloat32;
    case torch::kBFloat16: return ncclBfloat16;
    case torch::kHalf: return ncclFloat16;
    case torch::kDouble: return ncclFloat64;
    case torch::kInt: return ncclInt32;
    case torch::kLong: return ncclInt64;
    case torch::kByte: return ncclUint8;
    case torch::kChar: return ncclInt8;
    default:
        throw std::invalid_argument(std::string("NCCL reduction of dtype ") + c10::toString(t.scalar_type()) +
                                    " is not supported; reduce in float32, bfloat16, float16, float64, int32, "
                                    "int64 or uint8");
    }
}

ncclRedOp_t ncclOp(ReduceOp op) {
    switch (op) {
    case ReduceOp::Sum: return ncclSum;
    case ReduceOp::Max: return ncclMax;
    case ReduceOp::Min: return ncclMin;
    }
    return ncclSum;
}

size_t byteCount(const torch::Tensor& t) {
    return static_cast<size_t>(t.numel()) * t.element_size();
}

// Completes when its event has: wait() orders the caller's current stream after it.
class NcclWork : public Work {
public:
    NcclWork(std::shared_ptr<at::cuda::CUDAEvent> done, c10::DeviceIndex device)
        : m_done(std::move(done)), m_device(device) {}
    void wait() override { m_done->block(c10::cuda::getCurrentCUDAStream(m_device)); }
    bool test() override { return m_done->query(); }
    bool completesOnDevice() const override { return true; }

private:
    std::shared_ptr<at::cuda::CUDAEvent> m_done;
    c10::DeviceIndex m_device;
};

// An operation that was done when it was issued (a group of one rank, or a copy on the caller's
// stream, which later work on that stream is ordered after anyway).
class CompletedWork : public Work {
public:
    void wait() override {}
    bool test() override { return true; }
};

} // namespace

NcclCommunicator::NcclCommunicator(std::unique_ptr<MpiCommunicator> mpi, torch::Device device, NcclOptions options)
    : m_mpi(std::move(mpi)), m_device(device) {
    if (!m_mpi) throw std::invalid_argument("NcclCommunicator needs the MPI communicator of its group");
    if (!device.is_cuda() || !device.has_index())
        throw std::invalid_argument("NcclCommunicator needs a CUDA device with an index (cuda:N), got " + device.str());
    m_rank = m_mpi->rank();
    m_size = m_mpi->size();
    if (m_size == 1) return;
    c10::cuda::CUDAGuard guard(m_device.index());
    try {
        ncclUniqueId id;
        if (m_rank == 0) NCCL_CHECK(ncclGetUniqueId(&id));
        MPI_CHECK(MPI_Bcast(&id, static_cast<int>(sizeof id), MPI_BYTE, 0, m_mpi->comm()));
        createLane(m_main, m_size, m_rank, id);
        if (options.p2pChannels) createChannels();
    } catch (...) {
        for (Lane& lane : m_channels) destroyLane(lane, /*abort=*/true);
        destroyLane(m_main, /*abort=*/true);
        throw;
    }
}

NcclCommunicator::~NcclCommunicator() {
    if (m_size == 1) return;
    c10::cuda::CUDAGuard guard(m_device.index());
    // Destroyed while an exception unwinds (a failed step): peers may never join the operations
    // still queued, so abort them instead of waiting, and let the worker report and MPI_Abort.
    const bool failing = std::uncaught_exceptions() > 0;
    for (Lane& lane : m_channels) destroyLane(lane, failing);
    destroyLane(m_main, failing);
}

void NcclCommunicator::createLane(Lane& lane, int nranks, int rankInLane, const ncclUniqueId& id) {
    int leastPriority = 0, greatestPriority = 0;
    CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&leastPriority, &greatestPriority));
    // Communication kernels are short and others wait for them: let them start first.
    CUDA_CHECK(cudaStreamCreateWithPriority(&lane.raw, cudaStreamNonBlocking, greatestPriority));
    NCCL_CHECK(ncclCommInitRank(&lane.comm, nranks, id, rankInLane));
    lane.ready = std::make_unique<at::cuda::CUDAEvent>(cudaEventDisableTiming);
}

void NcclCommunicator::createChannels() {
    // Every rank walks the same list in the same order; each two-rank initialization waits only for
    // the other member, which reaches it after the same earlier entries, so none waits forever.
    std::vector<std::pair<int, int>> channels; // (sender, receiver)
    for (int i = 0; i < m_size; ++i) {
        const int j = (i + 1) % m_size;
        for (const auto& c : {std::make_pair(i, j), std::make_pair(j, i)})
            if (std::find(channels.begin(), channels.end(), c) == channels.end()) channels.push_back(c);
    }
    for (const auto& [from, to] : channels) {
        if (m_rank != from && m_rank != to) continue;
        ncclUniqueId id;
        if (m_rank == from) {
            NCCL_CHECK(ncclGetUniqueId(&id));
            MPI_CHECK(MPI_Send(&id, static_cast<int>(sizeof id), MPI_BYTE, to, kChannelIdTag, m_mpi->comm()));
        } else {
            MPI_CHECK(MPI_Recv(&id, static_cast<int>(sizeof id), MPI_BYTE, from, kChannelIdTag, m_mpi->comm(),
                               MPI_STATUS_IGNORE));
        }
        m_channels.emplace_back();
        Lane& lane = m_channels.back();
        const int mine = m_rank == from ? 0 : 1;
        lane.peerRankInLane = 1 - mine;
        createLane(lane, 2, mine, id);
        const bool sending = m_rank == from;
        m_channelOf[{sending ? to : from, sending}] = m_channels.size() - 1;
        connectLane(lane, sending);
    }
}

void NcclCommunicator::connectLane(Lane& lane, bool sending) {
    // NCCL opens a point-to-point connection on its first use, on the calling host thread, and
    // waits there for the peer to open its end. Two ranks whose first operations are each a send on
    // its own channel would wait for each other forever; so every channel is connected here, where
    // both members arrive in the same order.
    auto byte = torch::zeros({1}, torch::TensorOptions().dtype(torch::kUInt8).device(m_device));
    if (sending)
        NCCL_CHECK_COMM(ncclSend(byte.data_ptr(), 1, ncclUint8, lane.peerRankInLane, lane.comm, lane.raw), lane.comm);
    else
        NCCL_CHECK_COMM(ncclRecv(byte.data_ptr(), 1, ncclUint8, lane.peerRankInLane, lane.comm, lane.raw), lane.comm);
    CUDA_CHECK(cudaStreamSynchronize(lane.raw));
}

void NcclCommunicator::destroyLane(Lane& lane, bool abort) noexcept {
    // Errors are ignored here: a destructor cannot report them, and a failed peer was reported by
    // the operation that met it.
    if (abort) {
        if (lane.comm) ncclCommAbort(lane.comm);
    } else {
        if (lane.raw) cudaStreamSynchronize(lane.raw);
        if (lane.comm) ncclCommDestroy(lane.comm);
    }
    if (lane.raw) cudaStreamDestroy(lane.raw);
    lane.comm = nullptr;
    lane.raw = nullptr;
    lane.ready.reset();
}

c10::cuda::CUDAStream NcclCommunicator::laneStream(const Lane& lane) const {
    return c10::cuda::getStreamFromExternal(lane.raw, m_device.index());
}

bool NcclCommunicator::hasChannel(int peer, bool sending) const {
    return m_channelOf.count({peer, sending}) > 0;
}

NcclCommunicator::Lane& NcclCommunicator::laneFor(int peer, bool sending) {
    auto it = m_channelOf.find({peer, sending});
    return it == m_channelOf.end() ? m_main : m_channels[it->second];
}

size_t NcclCommunicator::inFlight() const {
    std::lock_guard<std::mutex> lock(m_mutex);
    return m_pending.size();
}

void NcclCommunicator::checkPeer(int peer, const char* what) const {
    if (peer < 0 || peer >= m_size)
        throw std::invalid_argument(std::string("NcclCommunicator::") + what + ": peer " + std::to_string(peer) +
                                    " is outside the group of " + std::to_string(m_size));
    if (peer == m_rank)
        throw std::invalid_argument(std::string("NcclCommunicator::") + what + ": rank " + std::to_string(peer) +
                                    " cannot exchange messages with itself over NCCL; copy the tensor instead");
}

void NcclCommunicator::requireDevice(const torch::Tensor& t, const char* what) const {
    if (!t.defined() || !t.is_contiguous())
        throw std::invalid_argument(std::string("NcclCommunicator::") + what + ": tensors must be defined and contiguous");
    if (t.device() != m_device)
        throw std::invalid_argument(std::string("NcclCommunicator::") + what + ": tensor on " + t.device().str() +
                                    " but this communicator serves " + m_device.str() +
                                    "; move it there (or to the CPU, which goes over MPI)");
}

namespace {

// True when every tensor is on the CPU (the operation goes over MPI); false when none is.
bool onHost(std::initializer_list<const torch::Tensor*> tensors, const char* what) {
    int cpu = 0;
    for (const torch::Tensor* t : tensors)
        if (t->defined() && t->device().is_cpu()) ++cpu;
    if (cpu != 0 && cpu != static_cast<int>(tensors.size()))
        throw std::invalid_argument(std::string("NcclCommunicator::") + what +
                                    ": tensors on the CPU and on the GPU in one operation; put them on one device");
    return cpu != 0;
}

} // namespace

template <class Op>
std::shared_ptr<Work> NcclCommunicator::enqueue(Lane& lane, std::initializer_list<const torch::Tensor*> tensors,
                                                int64_t bytes, Op&& op) {
    std::lock_guard<std::mutex> lock(m_mutex);
    c10::cuda::CUDAGuard guard(m_device.index());
    const c10::cuda::CUDAStream caller = c10::cuda::getCurrentCUDAStream(m_device.index());
    const c10::cuda::CUDAStream stream = laneStream(lane);
    // The communication stream starts where the caller's stream is now: inputs are written,
    // outputs no longer read.
    lane.ready->record(caller);
    lane.ready->block(stream);
    for (const torch::Tensor* t : tensors)
        c10::cuda::CUDACachingAllocator::recordStream(t->storage().data_ptr(), stream);
    op(lane.comm, lane.raw);
    auto done = std::make_shared<at::cuda::CUDAEvent>(cudaEventDisableTiming);
    done->record(stream);

    ++m_stats.collectives;
    m_stats.bytes += bytes;
    m_pending.push_back({++m_issued, done});
    // Retire from the front only (cheap); progress() scans everything.
    while (!m_pending.empty() && m_pending.front().done->query()) {
        m_stats.last_seq = std::max(m_stats.last_seq, m_pending.front().seq);
        m_pending.pop_front();
    }
    if (m_pending.size() > kFullScanThreshold) retireCompleted();
    return std::make_shared<NcclWork>(std::move(done), m_device.index());
}

std::shared_ptr<Work> NcclCommunicator::completedLocally(int64_t bytes) {
    std::lock_guard<std::mutex> lock(m_mutex);
    ++m_stats.collectives;
    m_stats.bytes += bytes;
    m_stats.last_seq = std::max(m_stats.last_seq, ++m_issued);
    return std::make_shared<CompletedWork>();
}

void NcclCommunicator::retireCompleted() {
    auto it = std::remove_if(m_pending.begin(), m_pending.end(), [this](const Pending& p) {
        if (!p.done->query()) return false;
        m_stats.last_seq = std::max(m_stats.last_seq, p.seq);
        return true;
    });
    m_pending.erase(it, m_pending.end());
}

std::shared_ptr<Work> NcclCommunicator::allReduceAsync(torch::Tensor& tensor, ReduceOp op) {
    if (onHost({&tensor}, "allReduce")) return m_mpi->allReduceAsync(tensor, op);
    requireDevice(tensor, "allReduce");
    const ncclDataType_t type = reduceType(tensor);
    if (m_size == 1) return completedLocally(static_cast<int64_t>(byteCount(tensor)));
    return enqueue(m_main, {&tensor}, static_cast<int64_t>(byteCount(tensor)), [&](ncclComm_t comm, cudaStream_t s) {
        NCCL_CHECK_COMM(ncclAllReduce(tensor.data_ptr(), tensor.data_ptr(), static_cast<size_t>(tensor.numel()), type,
                                      ncclOp(op), comm, s),
                        comm);
    });
}

std::shared_ptr<Work> NcclCommunicator::reduceScatterAsync(torch::Tensor& output, const torch::Tensor& input,
                                                           ReduceOp op) {
    if (onHost({&output, &input}, "reduceScatter")) return m_mpi->reduceScatterAsync(output, input, op);
    requireDevice(output, "reduceScatter");
    requireDevice(input, "reduceScatter");
    if (input.numel() != output.numel() * m_size || input.scalar_type() != output.scalar_type())
        throw std::invalid_argument("reduceScatter: input must hold size() chunks of output's shape and dtype");
    const ncclDataType_t type = reduceType(output);
    const auto bytes = static_cast<int64_t>(byteCount(input));
    if (m_size == 1) {
        if (output.data_ptr() != input.data_ptr()) output.view({-1}).copy_(input.view({-1}));
        return completedLocally(bytes);
    }
    return enqueue(m_main, {&output, &input}, bytes, [&](ncclComm_t comm, cudaStream_t s) {
        NCCL_CHECK_COMM(ncclReduceScatter(input.data_ptr(), output.data_ptr(), static_cast<size_t>(output.numel()),
                                          type, ncclOp(op), comm, s),
                        comm);
    });
}

std::shared_ptr<Work> NcclCommunicator::allGatherAsync(torch::Tensor& output, const torch::Tensor& input) {
    if (onHost({&output, &input}, "allGather")) return m_mpi->allGatherAsync(output, input);
    requireDevice(output, "allGather");
    requireDevice(input, "allGather");
    if (output.numel() != input.numel() * m_size || input.scalar_type() != output.scalar_type())
        throw std::invalid_argument("allGather: output must hold size() chunks of input's shape and dtype");
    const auto bytes = static_cast<int64_t>(byteCount(output));
    if (m_size == 1) {
        if (output.data_ptr() != input.data_ptr()) output.view({-1}).copy_(input.view({-1}));
        return completedLocally(bytes);
    }
    return enqueue(m_main, {&output, &input}, bytes, [&](ncclComm_t comm, cudaStream_t s) {
        NCCL_CHECK_COMM(ncclAllGather(input.data_ptr(), output.data_ptr(), byteCount(input), ncclUint8, comm, s), comm);
    });
}

std::shared_ptr<Work> NcclCommunicator::broadcastAsync(torch::Tensor& tensor, int root) {
    if (onHost({&tensor}, "broadcast")) return m_mpi->broadcastAsync(tensor, root);
    requireDevice(tensor, "broadcast");
    if (root < 0 || root >= m_size)
        throw std::invalid_argument("broadcast: root " + std::to_string(root) + " is outside the group of " +
                                    std::to_string(m_size));
    const auto bytes = static_cast<int64_t>(byteCount(tensor));
    if (m_size == 1) return completedLocally(bytes);
    return enqueue(m_main, {&tensor}, bytes, [&](ncclComm_t comm, cudaStream_t s) {
        NCCL_CHECK_COMM(ncclBroadcast(tensor.data_ptr(), tensor.data_ptr(), byteCount(tensor), ncclUint8, root, comm, s),
                        comm);
    });
}

std::shared_ptr<Work> NcclCommunicator::sendAsync(const torch::Tensor& tensor, int peer, int tag) {
    if (onHost({&tensor}, "send")) return m_mpi->sendAsync(tensor, peer, tag);
    requireDevice(tensor, "send");
    checkPeer(peer, "send");
    Lane& lane = laneFor(peer, /*sending=*/true);
    const int to = &lane == &m_main ? peer : lane.peerRankInLane;
    return enqueue(lane, {&tensor}, static_cast<int64_t>(byteCount(tensor)), [&](ncclComm_t comm, cudaStream_t s) {
        NCCL_CHECK_COMM(ncclSend(tensor.data_ptr(), byteCount(tensor), ncclUint8, to, comm, s), comm);
    });
}

std::shared_ptr<Work> NcclCommunicator::recvAsync(torch::Tensor& tensor, int peer, int tag) {
    if (onHost({&tensor}, "recv")) return m_mpi->recvAsync(tensor, peer, tag);
    requireDevice(tensor, "recv");
    checkPeer(peer, "recv");
    Lane& lane = laneFor(peer, /*sending=*/false);
    const int from = &lane == &m_main ? peer : lane.peerRankInLane;
    return enqueue(lane, {&tensor}, static_cast<int64_t>(byteCount(tensor)), [&](ncclComm_t comm, cudaStream_t s) {
        NCCL_CHECK_COMM(ncclRecv(tensor.data_ptr(), byteCount(tensor), ncclUint8, from, comm, s), comm);
    });
}

void NcclCommunicator::synchronize() {
    if (m_size == 1) return;
    c10::cuda::CUDAGuard guard(m_device.index());
    CUDA_CHECK(cudaStreamSynchronize(m_main.raw));
    for (Lane& lane : m_channels) CUDA_CHECK(cudaStreamSynchronize(lane.raw));
    progress();
}

void NcclCommunicator::progress() {
    if (m_size == 1) return;
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        retireCompleted();
    }
    auto check = [](const Lane& lane) {
        ncclResult_t state = ncclSuccess;
        NCCL_CHECK_COMM(ncclCommGetAsyncError(lane.comm, &state), lane.comm);
        if (state != ncclSuccess)
            throwNcclError(state, lane.comm, "a queued NCCL operation", __FILE__, __LINE__);
    };
    check(m_main);
    for (const Lane& lane : m_channels) check(lane);
}

void NcclCommunicator::barrier() {
    synchronize();
    m_mpi->barrier();
}

double NcclCommunicator::allReduceScalar(double value, ReduceOp op) {
    return m_mpi->allReduceScalar(value, op);
}

std::pair<double, int> NcclCommunicator::maxLoc(double value) {
    return m_mpi->maxLoc(value);
}

} // namespace parallax
