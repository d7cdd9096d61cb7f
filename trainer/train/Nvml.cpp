#include "trainer/train/Nvml.h"

#include <dlfcn.h>

namespace parallax {

namespace {
using nvmlReturn_t = int;
using nvmlDevice_t = void*;
struct nvmlUtilization_t {
    unsigned int gpu;
    unsigned int memory;
};
struct nvmlMemory_t {
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
};
constexpr int kNvmlSuccess = 0;
constexpr int kTemperatureGpu = 0;
constexpr int kClockSm = 1;
} // namespace

struct Nvml::Api {
    nvmlReturn_t (*init)() = nullptr;
    nvmlReturn_t (*shutdown)() = nullptr;
    nvmlReturn_t (*handle)(unsigned int, nvmlDevice_t*) = nullptr;
    nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlUtilization_t*) = nullptr;
    nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
    nvmlReturn_t (*power)(nvmlDevice_t, unsigned int*) = nullptr;
    nvmlReturn_t (*temperature)(nvmlDevice_t, int, unsigned int*) = nullptr;
    nvmlReturn_t (*clock)(nvmlDevice_t, int, unsigned int*) = nullptr;
    nvmlReturn_t (*name)(nvmlDevice_t, char*, unsigned int) = nullptr;
};

Nvml::Nvml() {
    m_lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!m_lib) return;
    m_api = new Api;
    auto sym = [this](const char* name) { return dlsym(m_lib, name); };
    m_api->init = reinterpret_cast<decltype(m_api->init)>(sym("nvmlInit_v2"));
    m_api->shutdown = reinterpret_cast<decltype(m_api->shutdown)>(sym("nvmlShutdown"));
    m_api->handle = reinterpret_cast<decltype(m_api->handle)>(sym("nvmlDeviceGetHandleByIndex_v2"));
    m_api->utilization = reinterpret_cast<decltype(m_api->utilization)>(sym("nvmlDeviceGetUtilizationRates"));
    m_api->memory = reinterpret_cast<decltype(m_api->memory)>(sym("nvmlDeviceGetMemoryInfo"));
    m_api->power = reinterpret_cast<decltype(m_api->power)>(sym("nvmlDeviceGetPowerUsage"));
    m_api->temperature = reinterpret_cast<decltype(m_api->temperature)>(sym("nvmlDeviceGetTemperature"));
    m_api->clock = reinterpret_cast<decltype(m_api->clock)>(sym("nvmlDeviceGetClockInfo"));
    m_api->name = reinterpret_cast<decltype(m_api->name)>(sym("nvmlDeviceGetName"));
    m_ok = m_api->init && m_api->handle && m_api->init() == kNvmlSuccess;
}

Nvml::~Nvml() {
    if (m_ok && m_api->shutdown) m_api->shutdown();
    delete m_api;
    if (m_lib) dlclose(m_lib);
}

std::optional<GpuReading> Nvml::read(int device) const {
    if (!m_ok) return std::nullopt;
    nvmlDevice_t h = nullptr;
    if (m_api->handle(static_cast<unsigned>(device), &h) != kNvmlSuccess) return std::nullopt;
    GpuReading r;
    nvmlUtilization_t u{};
    if (m_api->utilization && m_api->utilization(h, &u) == kNvmlSuccess) r.util = u.gpu;
    nvmlMemory_t m{};
    if (m_api->memory && m_api->memory(h, &m) == kNvmlSuccess) {
        r.mem_used = static_cast<double>(m.used);
        r.mem_total = static_cast<double>(m.total);
    }
    unsigned int v = 0;
    if (m_api->power && m_api->power(h, &v) == kNvmlSuccess) r.power_w = v / 1000.0;
    if (m_api->temperature && m_api->temperature(h, kTemperatureGpu, &v) == kNvmlSuccess) r.temp_c = v;
    if (m_api->clock && m_api->clock(h, kClockSm, &v) == kNvmlSuccess) r.sm_clock_mhz = v;
    return r;
}

std::string Nvml::deviceName(int device) const {
    if (!m_ok || !m_api->name) return {};
    nvmlDevice_t h = nullptr;
    if (m_api->handle(static_cast<unsigned>(device), &h) != kNvmlSuccess) return {};
    char buf[96] = {};
    if (m_api->name(h, buf, sizeof buf) != kNvmlSuccess) return {};
    return buf;
}

} // namespace parallax
