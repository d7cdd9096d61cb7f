#include "trainer/comm/FlightRecorder.h"

#include <iterator>

#include <nlohmann/json.hpp>

#include <algorithm>

namespace parallax {

namespace {

double wallNow() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

} // namespace

FlightRecorder::GroupState& FlightRecorder::group(const std::string& name) {
    for (GroupState& g : m_groups)
        if (g.group == name) return g;
    m_groups.push_back({name, 0, 0});
    return m_groups.back();
}

size_t FlightRecorder::enqueue(const std::string& groupName, const std::string& op, int64_t bytes, int peer) {
    std::lock_guard<std::mutex> lock(m_mutex);
    GroupState& g = group(groupName);
    Entry e;
    e.group = groupName;
    e.op = op;
    e.seq = ++g.enqueued;
    e.bytes = bytes;
    e.peer = peer;
    e.enqueued = wallNow();
    ++m_operations;
    m_bytes += bytes;
    m_ring.push_back(std::move(e));
    while (m_ring.size() > m_capacity) {
        m_ring.pop_front();
        ++m_first;
    }
    return m_first + m_ring.size() - 1;
}

void FlightRecorder::complete(size_t handle) {
    std::lock_guard<std::mutex> lock(m_mutex);
    if (handle < m_first || handle - m_first >= m_ring.size()) return; // left the ring already
    Entry& e = m_ring[handle - m_first];
    if (e.completed > 0) return;
    e.completed = wallNow();
    GroupState& g = group(e.group);
    g.completed = std::max(g.completed, e.seq);
}

void FlightRecorder::completeWhen(size_t handle, std::function<bool()> probe) {
    std::vector<size_t> overflow;
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_probes.emplace_back(handle, std::move(probe));
        // Nobody polls (or the device is that far behind): the oldest count as complete now
        // rather than the list growing without bound.
        while (m_probes.size() > std::max<size_t>(1, m_capacity / 2)) {
            overflow.push_back(m_probes.front().first);
            m_probes.erase(m_probes.begin());
        }
    }
    for (size_t h : overflow) complete(h);
}

void FlightRecorder::pollCompletions() {
    std::vector<std::pair<size_t, std::function<bool()>>> probes;
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        probes.swap(m_probes);
    }
    if (probes.empty()) return;
    // Probes are asked without the lock: the training thread enqueues meanwhile.
    std::vector<std::pair<size_t, std::function<bool()>>> open;
    for (auto& p : probes) {
        if (p.second()) complete(p.first);
        else open.push_back(std::move(p));
    }
    std::lock_guard<std::mutex> lock(m_mutex);
    // Those not done stay, in order, before any added meanwhile.
    open.insert(open.end(), std::make_move_iterator(m_probes.begin()), std::make_move_iterator(m_probes.end()));
    m_probes.swap(open);
}

void FlightRecorder::addWait(Clock::duration waited) {
    std::lock_guard<std::mutex> lock(m_mutex);
    m_waited += waited;
}

double FlightRecorder::takeWaitSeconds() {
    std::lock_guard<std::mutex> lock(m_mutex);
    const double s = std::chrono::duration<double>(m_waited).count();
    m_waited = Clock::duration(0);
    return s;
}

FlightRecorder::Snapshot FlightRecorder::snapshot() const {
    std::lock_guard<std::mutex> lock(m_mutex);
    Snapshot s;
    s.groups = m_groups;
    s.operations = m_operations;
    s.bytes = m_bytes;
    for (const Entry& e : m_ring) {
        if (e.completed == 0) {
            s.pending = e;
            break;
        }
    }
    return s;
}

std::string FlightRecorder::dumpJson(int rank, const std::string& host) const {
    std::lock_guard<std::mutex> lock(m_mutex);
    nlohmann::json entries = nlohmann::json::array();
    for (const Entry& e : m_ring)
        entries.push_back({{"group", e.group}, {"op", e.op}, {"seq", e.seq}, {"bytes", e.bytes}, {"peer", e.peer},
                           {"enqueued", e.enqueued}, {"completed", e.completed}});
    nlohmann::json groups = nlohmann::json::array();
    for (const GroupState& g : m_groups)
        groups.push_back({{"group", g.group}, {"enqueued", g.enqueued}, {"completed", g.completed}});
    return nlohmann::json{{"rank", rank}, {"host", host}, {"t", wallNow()}, {"groups", groups}, {"operations", entries}}
        .dump(1);
}

} // namespace parallax
