#include "trainer/comm/RecordedCommunicator.h"

#include <map>

namespace parallax {

namespace {

int64_t bytesOf(const torch::Tensor& t) { return t.defined() ? t.numel() * static_cast<int64_t>(t.element_size()) : 0; }

// Marks its operation complete in the recorder once the caller saw it complete, and counts the
// time the caller spent blocked in wait().
class RecordedWork : public Work {
public:
    RecordedWork(std::shared_ptr<Work> inner, std::shared_ptr<FlightRecorder> recorder, size_t handle)
        : m_inner(std::move(inner)), m_recorder(std::move(recorder)), m_handle(handle) {}
    ~RecordedWork() override {
        if (m_inner && m_inner->completesOnDevice() && !m_done) {
            watchOnDevice(); // complete when the device says so, not when the work is dropped
            return;
        }
        m_inner.reset(); // an operation's destructor waits for it
        done();
    }
    void wait() override {
        const auto start = FlightRecorder::Clock::now();
        m_inner->wait();
        m_recorder->addWait(FlightRecorder::Clock::now() - start);
        if (m_inner->completesOnDevice())
            watchOnDevice(); // wait() only ordered the stream: the device completes it later
        else
            done();
    }
    bool completesOnDevice() const override { return m_inner->completesOnDevice(); }
    bool test() override {
        const bool complete = m_inner->test();
        if (complete) done();
        return complete;
    }

private:
    void done() {
        if (m_done) return;
        m_done = true;
        m_recorder->complete(m_handle);
    }
    void watchOnDevice() {
        if (m_done) return;
        m_done = true;
        m_recorder->completeWhen(m_handle, [inner = m_inner] { return inner->test(); });
    }
    std::shared_ptr<Work> m_inner;
    std::shared_ptr<FlightRecorder> m_recorder;
    size_t m_handle;
    bool m_done = false;
};

} // namespace

RecordedCommunicator::RecordedCommunicator(std::shared_ptr<Communicator> inner, std::string group,
                                           std::shared_ptr<FlightRecorder> recorder)
    : m_inner(std::move(inner)), m_group(std::move(group)), m_recorder(std::move(recorder)) {}

std::shared_ptr<Work> RecordedCommunicator::record(std::shared_ptr<Work> work, size_t handle) {
    m_stats = m_inner->stats();
    return std::make_shared<RecordedWork>(std::move(work), m_recorder, handle);
}

template <typename F>
auto RecordedCommunicator::blocking(const char* op, int64_t bytes, F&& call) {
    const size_t handle = m_recorder->enqueue(m_group, op, bytes);
    const auto start = FlightRecorder::Clock::now();
    auto result = call();
    m_recorder->addWait(FlightRecorder::Clock::now() - start);
    m_recorder->complete(handle);
    m_stats = m_inner->stats();
    return result;
}

std::shared_ptr<Work> RecordedCommunicator::allReduceAsync(torch::Tensor& tensor, ReduceOp op) {
    const size_t h = m_recorder->enqueue(m_group, "all_reduce", bytesOf(tensor));
    return record(m_inner->allReduceAsync(tensor, op), h);
}

std::shared_ptr<Work> RecordedCommunicator::reduceScatterAsync(torch::Tensor& output, const torch::Tensor& input,
                                                               ReduceOp op) {
    const size_t h = m_recorder->enqueue(m_group, "reduce_scatter", bytesOf(input));
    return record(m_inner->reduceScatterAsync(output, input, op), h);
}

std::shared_ptr<Work> RecordedCommunicator::allGatherAsync(torch::Tensor& output, const torch::Tensor& input) {
    const size_t h = m_recorder->enqueue(m_group, "all_gather", bytesOf(output));
    return record(m_inner->allGatherAsync(output, input), h);
}

std::shared_ptr<Work> RecordedCommunicator::broadcastAsync(torch::Tensor& tensor, int root) {
    const size_t h = m_recorder->enqueue(m_group, "broadcast", bytesOf(tensor), root);
    return record(m_inner->broadcastAsync(tensor, root), h);
}

std::shared_ptr<Work> RecordedCommunicator::sendAsync(const torch::Tensor& tensor, int peer, int tag) {
    const size_t h = m_recorder->enqueue(m_group, "send", bytesOf(tensor), peer);
    return record(m_inner->sendAsync(tensor, peer, tag), h);
}

std::shared_ptr<Work> RecordedCommunicator::recvAsync(torch::Tensor& tensor, int peer, int tag) {
    const size_t h = m_recorder->enqueue(m_group, "recv", bytesOf(tensor), peer);
    return record(m_inner->recvAsync(tensor, peer, tag), h);
}

void RecordedCommunicator::barrier() {
    blocking("barrier", 0, [&] {
        m_inner->barrier();
        return 0;
    });
}

double RecordedCommunicator::allReduceScalar(double value, ReduceOp op) {
    return blocking("all_reduce", 8, [&] { return m_inner->allReduceScalar(value, op); });
}

std::pair<double, int> RecordedCommunicator::maxLoc(double value) {
    return blocking("all_reduce", 16, [&] { return m_inner->maxLoc(value); });
}

void recordCommunication(ProcessGroups& groups, const std::shared_ptr<FlightRecorder>& recorder) {
    std::map<Communicator*, std::shared_ptr<Communicator>> wrapped;
    auto wrap = [&](std::shared_ptr<Communicator>& comm, const char* name) {
        if (!comm) return;
        auto it = wrapped.find(comm.get());
        if (it == wrapped.end())
            it = wrapped.emplace(comm.get(), std::make_shared<RecordedCommunicator>(comm, name, recorder)).first;
        comm = it->second;
    };
    wrap(groups.world, "world");
    wrap(groups.dp, "dp");
    wrap(groups.tp, "tp");
    wrap(groups.pp, "pp");
    wrap(groups.mp, "mp");
}

} // namespace parallax
