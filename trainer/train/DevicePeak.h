#pragma once

#include "core/spec/Choice.h"

#include <string>

namespace parallax {

struct PeakFlops {
    double flops = 0;        // dense peak of one device (one rank) for the precision
    std::string basis;       // how it was obtained, shown next to MFU
};

// Dense peak for MFU. GPUs: the vendor's dense figure for the precision (H100/H200: 989 TFLOP/s
// bf16, 67 TFLOP/s fp32); CPUs: cores x clock x FMA width of the vector unit. PARALLAX_PEAK_TFLOPS
// overrides both.
PeakFlops devicePeakFlops(bool cuda, const std::string& deviceName, Precision precision, int cpuThreads);
// The same for CUDA device `cudaDevice` (its name asked of the driver), or the CPU where it is -1.
PeakFlops devicePeakFlops(int cudaDevice, Precision precision, int cpuThreads);

} // namespace parallax
