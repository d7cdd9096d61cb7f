#pragma once

#include <string>

namespace parallax {

// This executable's path (/proc/self/exe).
std::string selfExecutable();
// parallax-worker: $PARALLAX_WORKER when set, else beside this executable. Throws CliError naming
// both places when neither has it.
std::string locateWorker();
// Where locateWorker() would look, without checking (for `check`).
std::string expectedWorkerPath();

} // namespace parallax
