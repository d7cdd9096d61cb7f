# Finds every dependency once; targets link the imported targets below and nothing else.
find_package(Threads REQUIRED)

# Header-only libraries: Debian's packages by default, a staged folder (PARALLAX_THIRD_PARTY) on
# hosts that have none (the GPU build in packaging/device).
find_package(nlohmann_json 3.9 QUIET)
if(NOT TARGET nlohmann_json::nlohmann_json)
  add_library(nlohmann_json::nlohmann_json INTERFACE IMPORTED)
  target_include_directories(nlohmann_json::nlohmann_json INTERFACE "${PARALLAX_THIRD_PARTY}")
endif()

find_package(tomlplusplus 3 QUIET)
if(NOT TARGET tomlplusplus::tomlplusplus)
  add_library(tomlplusplus::tomlplusplus INTERFACE IMPORTED)
  target_include_directories(tomlplusplus::tomlplusplus INTERFACE "${PARALLAX_THIRD_PARTY}")
  target_compile_definitions(tomlplusplus::tomlplusplus INTERFACE TOML_HEADER_ONLY=1)
endif()

find_package(CLI11 QUIET)
if(NOT TARGET CLI11::CLI11)
  add_library(CLI11::CLI11 INTERFACE IMPORTED)
  target_include_directories(CLI11::CLI11 INTERFACE "${PARALLAX_THIRD_PARTY}")
endif()

find_package(SQLite3 REQUIRED)

if(PARALLAX_WORKER)
  find_package(Torch REQUIRED)
  find_package(MPI REQUIRED COMPONENTS CXX)
  # CUDA, NCCL and NVML are optional: a CPU LibTorch builds a CPU worker.
  find_package(CUDAToolkit QUIET)
  set(PARALLAX_WITH_CUDA OFF)
  if(TORCH_CUDA_LIBRARIES OR TARGET torch_cuda)
    find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} $ENV{NCCL_HOME}/include)
    find_library(NCCL_LIBRARY NAMES nccl HINTS ${CUDAToolkit_LIBRARY_DIR} $ENV{NCCL_HOME}/lib)
    if(NCCL_INCLUDE_DIR AND NCCL_LIBRARY AND CUDAToolkit_FOUND)
      set(PARALLAX_WITH_CUDA ON)
    endif()
  endif()
  message(STATUS "Parallax worker: LibTorch ${Torch_VERSION}, CUDA+NCCL ${PARALLAX_WITH_CUDA}")
endif()

if(PARALLAX_CONSOLE)
  find_package(Qt6 6.2 REQUIRED COMPONENTS Core Gui Widgets PrintSupport Test)
  find_package(QCustomPlotQt6 REQUIRED)
endif()

if(BUILD_TESTING)
  find_package(GTest REQUIRED)
  include(GoogleTest)
endif()
