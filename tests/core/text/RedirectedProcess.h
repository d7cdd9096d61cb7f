#pragma once

#include <string>
#include <vector>

namespace parallax::testing {

// Runs argv[0] (searched in PATH) with standard input read from `inputFile` and standard output
// written to `outputFile`; standard error goes to `errorFile`. Returns the exit code (128 + signal
// when killed).
int runRedirected(const std::vector<std::string>& argv, const std::string& inputFile, const std::string& outputFile,
                  const std::string& errorFile);

} // namespace parallax::testing
