#pragma once

// The wrappers' one way of turning a kernel launch's status into an error that names the operation.

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

namespace parallax::kernels {

// Throws std::runtime_error "<operation> <stage>: <CUDA's message>" unless `status` is cudaSuccess.
inline void throwOnError(cudaError_t status, const char* operation, const char* stage) {
    if (status != cudaSuccess)
        throw std::runtime_error(std::string(operation) + " " + stage + ": " + cudaGetErrorString(status));
}

} // namespace parallax::kernels
