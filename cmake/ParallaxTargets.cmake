# Compile options shared by every Parallax target (linked, never set globally).
add_library(parallax_options INTERFACE)
target_compile_features(parallax_options INTERFACE cxx_std_17)
target_include_directories(parallax_options INTERFACE "${PROJECT_SOURCE_DIR}")
target_compile_options(parallax_options INTERFACE
  $<$<CXX_COMPILER_ID:GNU,Clang>:-Wall -Wextra -Wno-unused-parameter>)

option(PARALLAX_ASAN "Build with AddressSanitizer and UBSan" OFF)
if(PARALLAX_ASAN)
  target_compile_options(parallax_options INTERFACE -fsanitize=address,undefined -fno-omit-frame-pointer)
  target_link_options(parallax_options INTERFACE -fsanitize=address,undefined)
endif()

# parallax_add_test(NAME LABELS l1 [l2] SOURCES ... LIBS ... [SERIAL] [FIXTURE f]): one GoogleTest binary,
# every test discovered with the labels given (SERIAL: each runs alone, for tests that time the machine;
# FIXTURE: a ctest fixture each test requires, whose setup tests then run first).
function(parallax_add_test name)
  cmake_parse_arguments(T "SERIAL" "TIMEOUT;FIXTURE" "LABELS;SOURCES;LIBS;PCH" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE parallax_options ${T_LIBS} GTest::gtest GTest::gtest_main)
  if(T_PCH)
    target_precompile_headers(${name} REUSE_FROM ${T_PCH})
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 600)
  endif()
  set(_extra "")
  if(T_SERIAL)
    list(APPEND _extra RUN_SERIAL TRUE)
  endif()
  if(T_FIXTURE)
    list(APPEND _extra FIXTURES_REQUIRED ${T_FIXTURE})
  endif()
  gtest_discover_tests(${name}
    PROPERTIES LABELS "${T_LABELS}" TIMEOUT ${T_TIMEOUT} ${_extra}
               ENVIRONMENT "PARALLAX_BUILD_DIR=${PROJECT_BINARY_DIR}"
               ENVIRONMENT_MODIFICATION "PARALLAX_SOURCE_DIR=set:${PROJECT_SOURCE_DIR}"
    DISCOVERY_TIMEOUT 60)
endfunction()

# Adds each listed sub-folder (each must have a CMakeLists.txt: a missing one fails the configure).
macro(parallax_add_subdirectories)
  foreach(_sub ${ARGN})
    add_subdirectory(${_sub})
  endforeach()
endmacro()
