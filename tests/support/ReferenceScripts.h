#pragma once

// The scripts of tests/reference and the interpreter that runs them (Debian's python3-torch), for
// tests that run them without linking LibTorch themselves (a console test making a tiny pipeline).

#include "tests/support/Process.h"

#include <string>

namespace parallax::testing {

// The interpreter with Debian's python3-torch (the one on PATH may be another).
inline constexpr const char* kReferencePython = "/usr/bin/python3";

inline bool referenceAvailable() { return runProcess({kReferencePython, "-c", "import torch"}).exitCode == 0; }

// A script of tests/reference by its file name.
inline std::string referenceScript(const std::string& name) { return sourceDir() + "/tests/reference/" + name; }

} // namespace parallax::testing
