# The scale benchmark's stand-in mpirun and the code that supervises a run of it, shared by
# bench/scale and the launch tests (whichever CMake reads first defines them).
include_guard(GLOBAL)

add_executable(bench_scale_launcher ${CMAKE_CURRENT_LIST_DIR}/ScaleLauncher.cpp)
target_link_libraries(bench_scale_launcher PRIVATE parallax_options parallax_telemetry)

add_library(parallax_scale_run STATIC ${CMAKE_CURRENT_LIST_DIR}/ScaleRun.cpp
  ${CMAKE_CURRENT_LIST_DIR}/StoredTelemetry.cpp)
target_link_libraries(parallax_scale_run PUBLIC parallax_options parallax_launch parallax_store)
