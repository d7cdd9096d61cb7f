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

# A library that may come without its development package: the header from the staged folder
# (packaging/device/stage-deps.sh copies it to <third party>/<name>/include) and the shared library
# the system already has for its own programs (or the staged copy in <third party>/<name>/lib).
function(parallax_staged_library var header names)
  if(NOT PARALLAX_THIRD_PARTY)
    return()
  endif()
  get_filename_component(_stage "${PARALLAX_THIRD_PARTY}" ABSOLUTE BASE_DIR "${PROJECT_SOURCE_DIR}")
  find_path(${var}_STAGED_INCLUDE ${header} PATHS "${_stage}/${var}/include" NO_DEFAULT_PATH)
  find_library(${var}_STAGED_LIBRARY NAMES ${names})
  if(NOT ${var}_STAGED_LIBRARY)
    find_library(${var}_STAGED_LIBRARY NAMES ${names} PATHS "${_stage}/${var}/lib" NO_DEFAULT_PATH)
  endif()
endfunction()

# SQLite: the run store (and so the supervisor and parallax-cli). PARALLAX_WITH_STORE says whether it
# can be built; the console needs it.
find_package(SQLite3 QUIET)
if(NOT TARGET SQLite::SQLite3)
  parallax_staged_library(sqlite3 sqlite3.h "sqlite3;libsqlite3.so.0")
  if(sqlite3_STAGED_INCLUDE AND sqlite3_STAGED_LIBRARY)
    add_library(SQLite::SQLite3 UNKNOWN IMPORTED)
    set_target_properties(SQLite::SQLite3 PROPERTIES
      IMPORTED_LOCATION "${sqlite3_STAGED_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${sqlite3_STAGED_INCLUDE}")
    message(STATUS "SQLite: staged header ${sqlite3_STAGED_INCLUDE}, library ${sqlite3_STAGED_LIBRARY}")
  endif()
endif()
if(TARGET SQLite::SQLite3)
  set(PARALLAX_WITH_STORE ON)
else()
  set(PARALLAX_WITH_STORE OFF)
  if(PARALLAX_CONSOLE)
    message(FATAL_ERROR "SQLite not found: install libsqlite3-dev (packaging/deps.sh), or configure with "
                        "-DPARALLAX_CONSOLE=OFF and -DPARALLAX_THIRD_PARTY=<folder from packaging/device/stage-deps.sh>")
  endif()
  message(WARNING "SQLite not found: the run store, the supervisor and parallax-cli cannot be built; "
                  "stage it with packaging/device/stage-deps.sh or install libsqlite3-dev")
endif()

# libjpeg-turbo, libpng and libwebp with its demuxer: images (core/image). PARALLAX_WITH_IMAGES says
# whether they are found; without them nothing decodes JPEG, PNG or WebP.
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(PARALLAX_JPEG QUIET IMPORTED_TARGET libjpeg)
  pkg_check_modules(PARALLAX_PNG QUIET IMPORTED_TARGET libpng)
  pkg_check_modules(PARALLAX_WEBP QUIET IMPORTED_TARGET libwebp libwebpdemux)
endif()
if(TARGET PkgConfig::PARALLAX_JPEG AND TARGET PkgConfig::PARALLAX_PNG AND TARGET PkgConfig::PARALLAX_WEBP)
  set(PARALLAX_WITH_IMAGES ON)
else()
  set(PARALLAX_WITH_IMAGES OFF)
  message(WARNING "libjpeg, libpng or libwebp not found: images (core/image) are not built; install "
                  "libjpeg62-turbo-dev, libpng-dev and libwebp-dev (packaging/deps.sh)")
endif()

# zlib (checkpoints, datasets): the staged header with the system's libz when zlib1g-dev is absent.
# FindZLIB keeps what it finds in the cache, so the trainer's own find_package(ZLIB) agrees.
find_package(ZLIB QUIET)
if(NOT ZLIB_FOUND)
  parallax_staged_library(zlib zlib.h "z;libz.so.1")
  if(zlib_STAGED_INCLUDE AND zlib_STAGED_LIBRARY)
    set(ZLIB_INCLUDE_DIR "${zlib_STAGED_INCLUDE}" CACHE PATH "zlib headers" FORCE)
    set(ZLIB_LIBRARY "${zlib_STAGED_LIBRARY}" CACHE FILEPATH "zlib library" FORCE)
    find_package(ZLIB)
  endif()
endif()

# PCRE2 (the pre-tokenizers' Unicode regular expressions, JIT-compiled) and ICU (Unicode
# normalization): the tokenizer, core/text. PARALLAX_WITH_TEXT says whether it can be built; without
# it parallax-cli has no tokenize command.
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(PCRE2 QUIET IMPORTED_TARGET libpcre2-8)
endif()
find_package(ICU QUIET COMPONENTS uc)
if(TARGET PkgConfig::PCRE2 AND TARGET ICU::uc)
  set(PARALLAX_WITH_TEXT ON)
else()
  set(PARALLAX_WITH_TEXT OFF)
  message(WARNING "PCRE2 or ICU not found: the tokenizer (core/text) and parallax-cli tokenize are not built; "
                  "install libpcre2-dev and libicu-dev (packaging/deps.sh)")
endif()

if(PARALLAX_WORKER)
  find_package(Torch REQUIRED)
  find_package(MPI REQUIRED COMPONENTS CXX)
  # CUDA, NCCL and NVML are optional: a CPU LibTorch builds a CPU worker.
  option(PARALLAX_USE_CUDA "Build the CUDA/NCCL worker when LibTorch has CUDA" ON)
  set(PARALLAX_WITH_CUDA OFF)
  set(PARALLAX_CUDA_KERNELS OFF)
  if(PARALLAX_USE_CUDA AND (TORCH_CUDA_LIBRARIES OR TARGET torch_cuda))
    find_package(CUDAToolkit QUIET)
    # NCCL as LibTorch loads it: NCCL_HOME when given, else the pip package beside a pip LibTorch
    # (<site-packages>/torch/share/cmake/Torch -> <site-packages>/nvidia/nccl, which ships only
    # libnccl.so.2), else the CUDA toolkit's. Linking the one LibTorch uses keeps a single NCCL in
    # the process.
    set(_nccl_roots "")
    if(NCCL_HOME)
      list(APPEND _nccl_roots "${NCCL_HOME}")
    endif()
    if(DEFINED ENV{NCCL_HOME})
      list(APPEND _nccl_roots "$ENV{NCCL_HOME}")
    endif()
    if(Torch_DIR)
      get_filename_component(_site "${Torch_DIR}/../../../.." ABSOLUTE)
      foreach(_sub nvidia/nccl nvidia/cu13 nvidia/cu12)
        list(APPEND _nccl_roots "${_site}/${_sub}")
      endforeach()
    endif()
    if(CUDAToolkit_FOUND)
      list(APPEND _nccl_roots "${CUDAToolkit_LIBRARY_ROOT}")
    endif()
    find_path(NCCL_INCLUDE_DIR nccl.h
      HINTS ${_nccl_roots} ${CUDAToolkit_INCLUDE_DIRS} PATH_SUFFIXES include)
    find_library(NCCL_LIBRARY NAMES nccl libnccl.so.2
      HINTS ${_nccl_roots} ${CUDAToolkit_LIBRARY_DIR} PATH_SUFFIXES lib lib64)
    if(NCCL_INCLUDE_DIR AND NCCL_LIBRARY AND CUDAToolkit_FOUND)
      set(PARALLAX_WITH_CUDA ON)
      file(STRINGS "${NCCL_INCLUDE_DIR}/nccl.h" _nccl_version REGEX "^#define NCCL_(MAJOR|MINOR|PATCH) ")
      string(REGEX REPLACE "#define NCCL_[A-Z]+ +" "" _nccl_version "${_nccl_version}")
      string(REPLACE ";" "." _nccl_version "${_nccl_version}")
      message(STATUS "NCCL ${_nccl_version}: ${NCCL_INCLUDE_DIR}, ${NCCL_LIBRARY}")
      # The worker's own CUDA kernels (trainer/kernels) need nvcc; without it the composed LibTorch
      # operations run instead.
      include(CheckLanguage)
      check_language(CUDA)
      if(CMAKE_CUDA_COMPILER)
        if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
          set(CMAKE_CUDA_ARCHITECTURES 80 90)
        endif()
        enable_language(CUDA)
        set(PARALLAX_CUDA_KERNELS ON)
      else()
        set(PARALLAX_CUDA_KERNELS OFF)
        message(WARNING "nvcc was not found: the worker's fused CUDA kernels are not built and the "
                        "composed LibTorch operations run instead (set CMAKE_CUDA_COMPILER to nvcc).")
      endif()
    else()
      message(WARNING "LibTorch has CUDA but NCCL or the CUDA toolkit was not found "
                      "(nccl.h: ${NCCL_INCLUDE_DIR}, libnccl: ${NCCL_LIBRARY}, CUDA toolkit: ${CUDAToolkit_FOUND}); "
                      "building a CPU-only worker. Set NCCL_HOME to NCCL's folder (include/, lib/).")
    endif()
  endif()
  message(STATUS "Parallax worker: LibTorch ${Torch_VERSION}, CUDA+NCCL ${PARALLAX_WITH_CUDA}, "
                 "fused CUDA kernels ${PARALLAX_CUDA_KERNELS}")
endif()

if(PARALLAX_CONSOLE)
  find_package(Qt6 6.2 REQUIRED COMPONENTS Core Gui Widgets PrintSupport Test)
  find_package(QCustomPlotQt6 REQUIRED)
endif()

if(BUILD_TESTING)
  find_package(GTest QUIET)
  # GoogleTest's sources staged beside the header-only libraries (Debian's /usr/src/googletest).
  if(NOT TARGET GTest::gtest AND PARALLAX_THIRD_PARTY)
    get_filename_component(_gtest "${PARALLAX_THIRD_PARTY}/googletest" ABSOLUTE BASE_DIR "${PROJECT_SOURCE_DIR}")
    if(EXISTS "${_gtest}/CMakeLists.txt")
      set(INSTALL_GTEST OFF CACHE BOOL "Install GoogleTest with Parallax" FORCE)
      set(BUILD_GMOCK OFF CACHE BOOL "Build GoogleMock with Parallax" FORCE)
      add_subdirectory("${_gtest}" "${PROJECT_BINARY_DIR}/third_party/googletest" EXCLUDE_FROM_ALL)
      # GoogleTest 1.11+ names its targets GTest::* itself; older ones need the aliases.
      if(NOT TARGET GTest::gtest)
        add_library(GTest::gtest ALIAS gtest)
        add_library(GTest::gtest_main ALIAS gtest_main)
      endif()
    endif()
  endif()
  if(NOT TARGET GTest::gtest)
    message(FATAL_ERROR "GoogleTest not found: install libgtest-dev, stage it with packaging/device/stage-deps.sh "
                        "(-DPARALLAX_THIRD_PARTY=.deps), or configure with -DBUILD_TESTING=OFF")
  endif()
  include(GoogleTest)
endif()
