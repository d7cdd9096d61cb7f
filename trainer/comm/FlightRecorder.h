#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace parallax {

// Every collective and point-to-point operation of this rank, per process group, in a ring: the op,
// its group, its sequence number in that group, its bytes, when it was enqueued and when it was
// known complete. Written by the training thread (RecordedCommunicator), read by the heartbeat
// thread while the training thread may be blocked inside an operation, hence the mutex.
class FlightRecorder {
public:
    using Clock = std::chrono::steady_clock;

    explicit FlightRecorder(size_t capacity = 4096) : m_capacity(capacity) {}

    struct Entry {
        std::string group;
        std::string op;     // all_reduce, reduce_scatter, all_gather, broadcast, send, recv, barrier, ...
        int64_t seq = 0;    // per group, from 1
        int64_t bytes = 0;
        int peer = -1;      // send/recv: the group rank on the other end
        double enqueued = 0;  // seconds since the epoch
        double completed = 0; // 0 while not known complete
    };

    // A new operation of `group`; returns its handle for complete().
    size_t enqueue(const std::string& group, const std::string& op, int64_t bytes, int peer = -1);
    void complete(size_t handle);
    // The operation of `handle` completes when `probe` says so (a CUDA event, queried from the
    // heartbeat thread): pollCompletions() asks every such probe and completes those done.
    // At most half the ring waits on probes: past that the oldest count as complete.
    void completeWhen(size_t handle, std::function<bool()> probe);
    void pollCompletions();
    // Time the training thread spent blocked waiting for operations, since the last call.
    void addWait(Clock::duration waited);
    double takeWaitSeconds();

    struct GroupState {
        std::string group;
        int64_t enqueued = 0;  // last sequence number enqueued
        int64_t completed = 0; // highest sequence number known complete
    };
    struct Snapshot {
        std::vector<GroupState> groups;
        int64_t operations = 0;
        int64_t bytes = 0;
        // The oldest operation not known complete (none: op empty).
        Entry pending;
    };
    Snapshot snapshot() const;

    // The ring as JSON (for the run folder when a hang fails the run).
    std::string dumpJson(int rank, const std::string& host) const;

private:
    GroupState& group(const std::string& name);

    size_t m_capacity;
    mutable std::mutex m_mutex;
    std::deque<Entry> m_ring;
    size_t m_first = 0; // handle of m_ring.front()
    std::vector<GroupState> m_groups;
    int64_t m_operations = 0;
    int64_t m_bytes = 0;
    Clock::duration m_waited{0};
    std::vector<std::pair<size_t, std::function<bool()>>> m_probes; // handle, completion probe
};

} // namespace parallax
