#pragma once

#include <string>
#include <vector>

namespace parallax {

// This executable's path (/proc/self/exe).
std::string selfExecutable();
// parallax-worker: $PARALLAX_WORKER when set, else beside this executable. Throws CliError naming
// both places when neither has it.
std::string locateWorker();
// Where locateWorker() would look, without checking (for `check`).
std::string expectedWorkerPath();

// `name` (parallax-export, parallax-cache) beside this executable, run in place of this process with
// `args` after it. Throws CliError, with `missing` (how it is built) when it is not there.
[[noreturn]] void execBeside(const std::string& name, const std::vector<std::string>& args, const std::string& missing);

} // namespace parallax
