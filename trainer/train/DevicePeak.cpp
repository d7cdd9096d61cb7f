#include "trainer/train/DevicePeak.h"

#if PARALLAX_WITH_CUDA
#include "trainer/train/CudaSupport.h"
#endif

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace parallax {

namespace {

double cpuMaxHz() {
    std::ifstream freq("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq");
    double khz = 0;
    if (freq >> khz && khz > 0) return khz * 1e3;
    std::ifstream info("/proc/cpuinfo");
    std::string line;
    while (std::getline(info, line)) {
        if (line.rfind("cpu MHz", 0) == 0) {
            const auto colon = line.find(':');
            if (colon != std::string::npos) return std::atof(line.c_str() + colon + 1) * 1e6;
        }
    }
    return 2.0e9;
}

// fp32 FLOPs per cycle per core: two FMA pipes x vector lanes x 2.
double cpuFlopsPerCycle(std::string* isa) {
    std::ifstream info("/proc/cpuinfo");
    std::string line;
    while (std::getline(info, line)) {
        if (line.rfind("flags", 0) == 0) {
            std::istringstream words(line);
            bool avx512 = false, avx2 = false, fma = false;
            std::string w;
            while (words >> w) {
                avx512 |= w == "avx512f";
                avx2 |= w == "avx2";
                fma |= w == "fma";
            }
            if (avx512) { *isa = "AVX-512"; return 64; }
            if (avx2 && fma) { *isa = "AVX2+FMA"; return 32; }
            *isa = "SSE";
            return 8;
        }
    }
    *isa = "unknown ISA";
    return 8;
}

} // namespace

PeakFlops devicePeakFlops(bool cuda, const std::string& deviceName, Precision precision, int cpuThreads) {
    PeakFlops p;
    if (const char* env = std::getenv("PARALLAX_PEAK_TFLOPS")) {
        p.flops = std::atof(env) * 1e12;
        p.basis = "PARALLAX_PEAK_TFLOPS";
        return p;
    }
    const bool bf16 = precision == Precision::Bf16;
    if (cuda) {
        struct Known {
            const char* name;
            double bf16;
            double fp32;
        };
        const Known known[] = {{"H200", 989e12, 67e12}, {"H100", 989e12, 67e12}, {"A100", 312e12, 19.5e12},
                               {"L40S", 362e12, 91.6e12}, {"B200", 2250e12, 80e12}};
        for (const Known& k : known) {
            if (deviceName.find(k.name) != std::string::npos) {
                p.flops = bf16 ? k.bf16 : k.fp32;
                p.basis = std::string(k.name) + (bf16 ? " dense bf16 " : " fp32 ") + std::to_string(p.flops / 1e12) + " TFLOP/s";
                return p;
            }
        }
        p.basis = "unknown GPU '" + deviceName + "': set PARALLAX_PEAK_TFLOPS for MFU";
        return p;
    }
    std::string isa;
    const double perCycle = cpuFlopsPerCycle(&isa);
    const double hz = cpuMaxHz();
    p.flops = perCycle * hz * std::max(1, cpuThreads);
    std::ostringstream basis;
    basis << std::max(1, cpuThreads) << " core(s) x " << hz / 1e9 << " GHz x " << perCycle << " fp32 FLOP/cycle ("
          << isa << ")";
    p.basis = basis.str();
    return p;
}

PeakFlops devicePeakFlops(int cudaDevice, Precision precision, int cpuThreads) {
    std::string name;
#if PARALLAX_WITH_CUDA
    if (cudaDevice >= 0) name = cudaDeviceName(cudaDevice);
#endif
    return devicePeakFlops(cudaDevice >= 0, name, precision, cpuThreads);
}

} // namespace parallax
