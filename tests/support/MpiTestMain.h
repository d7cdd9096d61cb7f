#pragma once

#include <gtest/gtest.h>
#include <mpi.h>

#include <functional>

namespace parallax::test {

// main() of a test program started under mpirun: every rank runs every test, rank 0 prints the
// report, and the exit code fails when any rank failed. `beforeFinalize` releases what must go
// before MPI does (communicators built on MPI).
inline int runTestsUnderMpi(int argc, char** argv, const std::function<void()>& beforeFinalize = {}) {
    MPI_Init(&argc, &argv);
    ::testing::InitGoogleTest(&argc, argv);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank != 0) {
        auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
        delete listeners.Release(listeners.default_result_printer());
    }
    int failed = RUN_ALL_TESTS();
    int anyFailed = 0;
    MPI_Allreduce(&failed, &anyFailed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (beforeFinalize) beforeFinalize();
    MPI_Finalize();
    return anyFailed;
}

} // namespace parallax::test
