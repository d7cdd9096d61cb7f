#pragma once

// Error checks for the CUDA runtime and NCCL that name the call, the file and the line. Only for
// builds with PARALLAX_WITH_CUDA.

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <stdexcept>
#include <string>

namespace parallax {

class CudaError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

class NcclError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

[[noreturn]] inline void throwCudaError(cudaError_t code, const char* call, const char* file, int line) {
    throw CudaError(std::string(file) + ":" + std::to_string(line) + ": " + call + " failed: " +
                    cudaGetErrorName(code) + " (" + cudaGetErrorString(code) + ")");
}

// `comm` may be null (initialization); otherwise NCCL's last message for it adds the detail that
// the result code alone lacks (which peer, which transport).
[[noreturn]] inline void throwNcclError(ncclResult_t code, ncclComm_t comm, const char* call, const char* file,
                                        int line) {
    std::string message = std::string(file) + ":" + std::to_string(line) + ": " + call +
                          " failed: " + ncclGetErrorString(code);
    const char* detail = ncclGetLastError(comm);
    if (detail && *detail) message += ": " + std::string(detail);
    if (code == ncclSystemError || code == ncclRemoteError)
        message += " (NCCL_DEBUG=INFO shows which rank or transport failed)";
    throw NcclError(message);
}

} // namespace parallax

#define CUDA_CHECK(call)                                                              \
    do {                                                                              \
        const cudaError_t parallaxCudaRc_ = (call);                                   \
        if (parallaxCudaRc_ != cudaSuccess)                                           \
            ::parallax::throwCudaError(parallaxCudaRc_, #call, __FILE__, __LINE__);   \
    } while (0)

// NCCL_CHECK(call) or NCCL_CHECK_COMM(call, comm) when a communicator exists for the detail.
#define NCCL_CHECK_COMM(call, comm)                                                          \
    do {                                                                                     \
        const ncclResult_t parallaxNcclRc_ = (call);                                         \
        if (parallaxNcclRc_ != ncclSuccess)                                                  \
            ::parallax::throwNcclError(parallaxNcclRc_, (comm), #call, __FILE__, __LINE__);  \
    } while (0)

#define NCCL_CHECK(call) NCCL_CHECK_COMM(call, nullptr)
