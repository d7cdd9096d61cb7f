#pragma once

#include <optional>
#include <string>

namespace parallax {

struct GpuReading {
    double util = -1;        // %
    double mem_used = -1;    // bytes
    double mem_total = -1;
    double power_w = -1;
    double temp_c = -1;
    double sm_clock_mhz = -1;
};

// NVML loaded at run time with dlopen, so the worker needs no NVML at build time and runs where no
// driver exists (available() is then false).
class Nvml {
public:
    Nvml();
    ~Nvml();
    Nvml(const Nvml&) = delete;
    Nvml& operator=(const Nvml&) = delete;

    bool available() const { return m_ok; }
    std::optional<GpuReading> read(int device) const;
    std::string deviceName(int device) const;

private:
    void* m_lib = nullptr;
    bool m_ok = false;
    struct Api;
    Api* m_api = nullptr;
};

} // namespace parallax
