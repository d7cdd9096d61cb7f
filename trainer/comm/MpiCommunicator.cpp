#include "trainer/comm/MpiCommunicator.h"

#include "trainer/comm/MpiCheck.h"

#include <algorithm>

namespace parallax {

namespace {

MPI_Datatype reduceType(const torch::Tensor& t) {
    switch (t.scalar_type()) {
    case torch::kFloat: return MPI_FLOAT;
    case torch::kDouble: return MPI_DOUBLE;
    case torch::kInt: return MPI_INT32_T;
    case torch::kLong: return MPI_INT64_T;
    default:
        throw std::invalid_argument(std::string("MPI reduction of dtype ") + c10::toString(t.scalar_type()) +
                                    " is not supported on CPU; reduce in float32 (parallel.reduce_dtype = \"fp32\")");
    }
}

MPI_Op mpiOp(ReduceOp op) {
    switch (op) {
    case ReduceOp::Sum: return MPI_SUM;
    case ReduceOp::Max: return MPI_MAX;
    case ReduceOp::Min: return MPI_MIN;
    }
    return MPI_SUM;
}

void requireCpuContiguous(const torch::Tensor& t, const char* what) {
    if (!t.defined() || !t.is_contiguous() || !t.device().is_cpu())
        throw std::invalid_argument(std::string("MpiCommunicator::") + what +
                                    ": tensors must be defined, contiguous CPU tensors");
}

int byteCount(const torch::Tensor& t) {
    const int64_t bytes = t.numel() * static_cast<int64_t>(t.element_size());
    if (bytes > std::numeric_limits<int>::max())
        throw std::invalid_argument("MpiCommunicator: message over 2 GiB; split it into buckets");
    return static_cast<int>(bytes);
}

int elementCount(const torch::Tensor& t) {
    if (t.numel() > std::numeric_limits<int>::max())
        throw std::invalid_argument("MpiCommunicator: message over 2^31 elements; split it into buckets");
    return static_cast<int>(t.numel());
}

// Keeps the tensors of an operation alive until it completed.
class MpiWork : public Work {
public:
    MpiWork(MPI_Request request, int64_t seq, int64_t* lastSeq, std::vector<torch::Tensor> keep)
        : m_request(request), m_seq(seq), m_lastSeq(lastSeq), m_keep(std::move(keep)) {}
    ~MpiWork() override {
        if (m_request != MPI_REQUEST_NULL) MPI_Wait(&m_request, MPI_STATUS_IGNORE);
    }
    void wait() override {
        if (m_request != MPI_REQUEST_NULL) MPI_CHECK(MPI_Wait(&m_request, MPI_STATUS_IGNORE));
        done();
    }
    bool test() override {
        if (m_request == MPI_REQUEST_NULL) return true;
        int flag = 0;
        MPI_CHECK(MPI_Test(&m_request, &flag, MPI_STATUS_IGNORE));
        if (flag) done();
        return flag != 0;
    }

private:
    void done() {
        *m_lastSeq = std::max(*m_lastSeq, m_seq);
        m_keep.clear();
    }
    MPI_Request m_request;
    int64_t m_seq;
    int64_t* m_lastSeq;
    std::vector<torch::Tensor> m_keep;
};

} // namespace

MpiCommunicator::MpiCommunicator(MPI_Comm comm) : m_comm(comm) {
    MPI_CHECK(MPI_Comm_set_errhandler(m_comm, MPI_ERRORS_RETURN));
    MPI_CHECK(MPI_Comm_rank(m_comm, &m_rank));
    MPI_CHECK(MPI_Comm_size(m_comm, &m_size));
}

MpiCommunicator::~MpiCommunicator() {
    if (m_comm != MPI_COMM_WORLD && m_comm != MPI_COMM_NULL) {
        int finalized = 0;
        MPI_Finalized(&finalized);
        if (!finalized) MPI_Comm_free(&m_comm);
    }
}

std::shared_ptr<Work> MpiCommunicator::issue(MPI_Request request, int64_t bytes, std::vector<torch::Tensor> keep) {
    ++m_stats.collectives;
    m_stats.bytes += bytes;
    auto work = std::make_shared<MpiWork>(request, ++m_issued, &m_stats.last_seq, std::move(keep));
    m_pending.push_back(work);
    return work;
}

std::shared_ptr<Work> MpiCommunicator::allReduceAsync(torch::Tensor& tensor, ReduceOp op) {
    requireCpuContiguous(tensor, "allReduce");
    MPI_Request req;
    MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, tensor.data_ptr(), elementCount(tensor), reduceType(tensor), mpiOp(op),
                             m_comm, &req));
    return issue(req, byteCount(tensor), std::vector<torch::Tensor>{tensor});
}

std::shared_ptr<Work> MpiCommunicator::reduceScatterAsync(torch::Tensor& output, const torch::Tensor& input,
                                                          ReduceOp op) {
    requireCpuContiguous(output, "reduceScatter");
    requireCpuContiguous(input, "reduceScatter");
    if (input.numel() != output.numel() * m_size || input.scalar_type() != output.scalar_type())
        throw std::invalid_argument("reduceScatter: input must hold size() chunks of output's shape and dtype");
    MPI_Request req;
    MPI_CHECK(MPI_Ireduce_scatter_block(input.data_ptr(), output.data_ptr(), elementCount(output), reduceType(output),
                                        mpiOp(op), m_comm, &req));
    return issue(req, byteCount(input), std::vector<torch::Tensor>{output, input});
}

std::shared_ptr<Work> MpiCommunicator::allGatherAsync(torch::Tensor& output, const torch::Tensor& input) {
    requireCpuContiguous(output, "allGather");
    requireCpuContiguous(input, "allGather");
    if (output.numel() != input.numel() * m_size || input.scalar_type() != output.scalar_type())
        throw std::invalid_argument("allGather: output must hold size() chunks of input's shape and dtype");
    MPI_Request req;
    MPI_CHECK(MPI_Iallgather(input.data_ptr(), byteCount(input), MPI_BYTE, output.data_ptr(), byteCount(input),
                             MPI_BYTE, m_comm, &req));
    return issue(req, byteCount(output), std::vector<torch::Tensor>{output, input});
}

std::shared_ptr<Work> MpiCommunicator::broadcastAsync(torch::Tensor& tensor, int root) {
    requireCpuContiguous(tensor, "broadcast");
    MPI_Request req;
    MPI_CHECK(MPI_Ibcast(tensor.data_ptr(), byteCount(tensor), MPI_BYTE, root, m_comm, &req));
    return issue(req, byteCount(tensor), std::vector<torch::Tensor>{tensor});
}

std::shared_ptr<Work> MpiCommunicator::sendAsync(const torch::Tensor& tensor, int peer, int tag) {
    requireCpuContiguous(tensor, "send");
    MPI_Request req;
    MPI_CHECK(MPI_Isend(tensor.data_ptr(), byteCount(tensor), MPI_BYTE, peer, tag, m_comm, &req));
    return issue(req, byteCount(tensor), std::vector<torch::Tensor>{tensor});
}

std::shared_ptr<Work> MpiCommunicator::recvAsync(torch::Tensor& tensor, int peer, int tag) {
    requireCpuContiguous(tensor, "recv");
    MPI_Request req;
    MPI_CHECK(MPI_Irecv(tensor.data_ptr(), byteCount(tensor), MPI_BYTE, peer, tag, m_comm, &req));
    return issue(req, byteCount(tensor), std::vector<torch::Tensor>{tensor});
}

void MpiCommunicator::barrier() {
    MPI_CHECK(MPI_Barrier(m_comm));
}

void MpiCommunicator::progress() {
    // Testing one live request is enough to enter MPI's progress engine for all of them.
    auto it = std::remove_if(m_pending.begin(), m_pending.end(), [](const std::weak_ptr<Work>& w) {
        auto work = w.lock();
        return !work || work->test();
    });
    m_pending.erase(it, m_pending.end());
}

double MpiCommunicator::allReduceScalar(double value, ReduceOp op) {
    double out = 0;
    MPI_CHECK(MPI_Allreduce(&value, &out, 1, MPI_DOUBLE, mpiOp(op), m_comm));
    return out;
}

std::pair<double, int> MpiCommunicator::maxLoc(double value) {
    struct {
        double value;
        int rank;
    } in{value, m_rank}, out{0, 0};
    MPI_CHECK(MPI_Allreduce(&in, &out, 1, MPI_DOUBLE_INT, MPI_MAXLOC, m_comm));
    return {out.value, out.rank};
}

std::unique_ptr<MpiCommunicator> MpiCommunicator::split(int color, int key) const {
    MPI_Comm sub = MPI_COMM_NULL;
    MPI_CHECK(MPI_Comm_split(m_comm, color, key, &sub));
    return std::make_unique<MpiCommunicator>(sub);
}

} // namespace parallax
