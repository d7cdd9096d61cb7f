#pragma once

#include <chrono>
#include <cstddef>
#include <utility>
#include <vector>

namespace parallax {

// Times the spans of a step (forward, backward, waits). begin/end bracket the work as issued;
// resolve() returns (start, end) per span in wall-clock seconds once the work has completed. On the
// CPU the host clock is the truth; on a GPU the work runs later than the host queues it, so CUDA
// events do the timing (the trainer's CUDA timer).
class SpanTimer {
public:
    virtual ~SpanTimer() = default;
    virtual size_t begin() = 0;
    virtual void end(size_t span) = 0;
    virtual std::vector<std::pair<double, double>> resolve() = 0;
    virtual void clear() = 0;
};

class WallSpanTimer : public SpanTimer {
public:
    size_t begin() override {
        m_spans.emplace_back(now(), 0.0);
        return m_spans.size() - 1;
    }
    void end(size_t span) override { m_spans[span].second = now(); }
    std::vector<std::pair<double, double>> resolve() override { return m_spans; }
    void clear() override { m_spans.clear(); }

private:
    static double now() {
        using namespace std::chrono;
        return duration<double>(system_clock::now().time_since_epoch()).count();
    }
    std::vector<std::pair<double, double>> m_spans;
};

} // namespace parallax
