#include "trainer/train/DeviceSampler.h"

#include <chrono>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace parallax {

DeviceSampler::DeviceSampler(TelemetryEmitter& out, std::string host, int gpu, int periodMs)
    : m_out(out), m_host(std::move(host)), m_gpu(gpu), m_periodMs(periodMs) {
    m_lastCpu = processCpuSeconds();
    m_lastWall = TelemetryEmitter::now();
}

DeviceSampler::~DeviceSampler() {
    stop();
}

double DeviceSampler::processCpuSeconds() {
    std::ifstream in("/proc/self/stat");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    // The command name may contain spaces; fields resume after the last ')'.
    const auto close = text.rfind(')');
    if (close == std::string::npos) return 0;
    std::istringstream fields(text.substr(close + 2));
    std::string f;
    unsigned long long utime = 0, stime = 0;
    for (int i = 3; i <= 15 && fields >> f; ++i) {
        if (i == 14) utime = std::stoull(f);
        if (i == 15) stime = std::stoull(f);
    }
    return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

double DeviceSampler::residentBytes() {
    std::ifstream in("/proc/self/statm");
    long long size = 0, resident = 0;
    in >> size >> resident;
    return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE));
}

double DeviceSampler::peakResidentBytes() {
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("VmHWM:", 0) != 0) continue;
        std::istringstream fields(line.substr(6));
        double kib = 0;
        fields >> kib;
        return kib * 1024.0;
    }
    return residentBytes(); // a kernel without VmHWM: the resident size now
}

bool DeviceSampler::resetPeakResident() {
    // "5" resets the resident high-water mark to the current resident size (Linux 4.0 on).
    std::ofstream out("/proc/self/clear_refs");
    out << "5";
    out.flush();
    return static_cast<bool>(out);
}

DeviceEvent DeviceSampler::sample() {
    DeviceEvent e;
    e.rank = m_out.rank();
    e.host = m_host;
    e.device = m_gpu;
    e.t = TelemetryEmitter::now();
    const double cpu = processCpuSeconds();
    const double dt = e.t - m_lastWall;
    if (dt > 0) e.cpu_pct = 100.0 * (cpu - m_lastCpu) / dt;
    m_lastCpu = cpu;
    m_lastWall = e.t;
    e.rss = residentBytes();
    if (m_gpu >= 0) {
        if (auto r = m_nvml.read(m_gpu)) {
            e.util = r->util;
            e.mem_used = r->mem_used;
            e.mem_total = r->mem_total;
            e.power_w = r->power_w;
            e.temp_c = r->temp_c;
            e.sm_clock_mhz = r->sm_clock_mhz;
        }
    }
    return e;
}

void DeviceSampler::start() {
    if (m_periodMs <= 0 || m_thread.joinable()) return;
    m_stop = false;
    m_thread = std::thread([this] { loop(); });
}

void DeviceSampler::stop() {
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_stop = true;
    }
    m_cv.notify_all();
    if (m_thread.joinable()) m_thread.join();
}

void DeviceSampler::loop() {
    std::unique_lock<std::mutex> lock(m_mutex);
    while (!m_stop) {
        if (m_cv.wait_for(lock, std::chrono::milliseconds(m_periodMs), [this] { return m_stop; })) break;
        lock.unlock();
        m_out.emit(sample());
        lock.lock();
    }
}

} // namespace parallax
