#pragma once

#include <mpi.h>

#include <stdexcept>
#include <string>

namespace parallax {

class MpiError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

[[noreturn]] inline void throwMpiError(int code, const char* call, const char* file, int line) {
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(code, text, &length);
    throw MpiError(std::string(file) + ":" + std::to_string(line) + ": " + call + " failed: " +
                   std::string(text, static_cast<size_t>(length)));
}

} // namespace parallax

// Communicators are created with MPI_ERRORS_RETURN so that failures carry file and line.
#define MPI_CHECK(call)                                                               \
    do {                                                                              \
        const int parallaxMpiRc_ = (call);                                            \
        if (parallaxMpiRc_ != MPI_SUCCESS)                                            \
            ::parallax::throwMpiError(parallaxMpiRc_, #call, __FILE__, __LINE__);     \
    } while (0)
