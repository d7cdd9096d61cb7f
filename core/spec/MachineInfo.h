#pragma once

#include <cstdint>
#include <optional>

namespace parallax {

// The machine a local run would start on, as the validator checks it (launch.target = "local"
// only: hosts and Slurm nodes are not this machine). The validator reads nothing itself, so that
// it stays a function of its arguments; its callers (the CLI, the console, the worker) pass
// thisMachine().
struct MachineInfo {
    int64_t cores = 0;                       // online logical CPUs; 0: unknown, not checked
    int64_t ram_bytes = 0;                   // physical memory; 0: unknown, not checked
    std::optional<int64_t> gpu_memory_bytes; // memory of one GPU, where the caller knows it
};

// Cores from sysconf(_SC_NPROCESSORS_ONLN) (all online CPUs, not this process's affinity: a rank
// bound to one core still shares the machine with the others), memory from /proc/meminfo's
// MemTotal (sysconf's physical pages where that cannot be read). No GPU memory: core code has no
// CUDA.
MachineInfo thisMachine();

} // namespace parallax
