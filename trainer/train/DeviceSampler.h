#pragma once

#include "trainer/train/Nvml.h"
#include "trainer/train/TelemetryEmitter.h"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace parallax {

// Emits a `device` event for this rank every period from a background thread: GPU utilization,
// memory, power, temperature and SM clock through NVML where the rank has a GPU; the process's CPU %
// and resident memory always.
class DeviceSampler {
public:
    DeviceSampler(TelemetryEmitter& out, std::string host, int gpu, int periodMs);
    ~DeviceSampler();
    DeviceSampler(const DeviceSampler&) = delete;
    DeviceSampler& operator=(const DeviceSampler&) = delete;

    void start();
    void stop();
    DeviceEvent sample(); // one reading now (also used for the first event at start)

    // Process CPU time (user + system) and resident set size, from /proc/self.
    static double processCpuSeconds();
    static double residentBytes();
    // The most this process has held resident since the last resetPeakResident() (VmHWM), or since
    // it started where the kernel does not let the mark be reset; resetPeakResident() then returns
    // false. A step's peak on the CPU: activations freed at its end are counted at their height.
    static double peakResidentBytes();
    static bool resetPeakResident();

private:
    void loop();
    TelemetryEmitter& m_out;
    std::string m_host;
    int m_gpu;
    int m_periodMs;
    Nvml m_nvml;
    double m_lastCpu = 0;
    double m_lastWall = 0;
    std::thread m_thread;
    std::mutex m_mutex;
    std::condition_variable m_cv;
    bool m_stop = false;
};

} // namespace parallax
