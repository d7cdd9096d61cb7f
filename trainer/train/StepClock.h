#pragma once

#include <torch/torch.h>

#include <chrono>
#include <cstddef>
#include <deque>
#include <vector>

namespace parallax {

// What a finished step reports once its work has completed: how long it took, how that time
// divides between the laps marked inside it (lapMs: from begin() to the first lap(), between laps, and
// from the last lap() to end(); they add up to ms), and the scalars it left on the device (loss,
// gradient norm).
struct StepReading {
    double ms = 0;
    std::vector<double> lapMs;
    std::vector<double> scalars;
};

// Times steps without making the host wait for each one. The trainer queues step N+1 before it
// reads step N, so the device never idles while the host reports. begin() before a step's work is
// queued, end(scalars) after it (scalars: a 1-D float64 tensor on the device, copied back without
// blocking), read() for the oldest step ended and not yet read: it waits for that step's work only.
// lap() between them marks where one phase of the step's work ends and the next begins.
class StepClock {
public:
    virtual ~StepClock() = default;
    virtual void begin() = 0;
    virtual void lap() = 0;
    virtual void end(const torch::Tensor& scalars) = 0;
    virtual StepReading read() = 0;
    virtual size_t unread() const = 0;
};

// On the CPU the work is done when the host has issued it: the host clock times it.
class HostStepClock : public StepClock {
public:
    void begin() override {
        m_start = m_lap = Clock::now();
        m_laps.clear();
    }
    void lap() override { m_laps.push_back(since(m_lap)); }
    void end(const torch::Tensor& scalars) override {
        StepReading r;
        r.ms = std::chrono::duration<double, std::milli>(Clock::now() - m_start).count();
        m_laps.push_back(since(m_lap));
        r.lapMs = std::move(m_laps);
        m_laps.clear();
        const torch::Tensor values = scalars.to(torch::kDouble).contiguous();
        r.scalars.assign(values.data_ptr<double>(), values.data_ptr<double>() + values.numel());
        m_done.push_back(std::move(r));
    }
    StepReading read() override {
        if (m_done.empty()) throw std::logic_error("StepClock::read: no step has ended");
        StepReading r = std::move(m_done.front());
        m_done.pop_front();
        return r;
    }
    size_t unread() const override { return m_done.size(); }

private:
    using Clock = std::chrono::steady_clock;
    // Milliseconds since `mark`, which moves to now.
    static double since(Clock::time_point& mark) {
        const Clock::time_point now = Clock::now();
        const double ms = std::chrono::duration<double, std::milli>(now - mark).count();
        mark = now;
        return ms;
    }
    Clock::time_point m_start, m_lap;
    std::vector<double> m_laps;
    std::deque<StepReading> m_done;
};

} // namespace parallax
