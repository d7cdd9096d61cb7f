#pragma once

#include <string>
#include <sys/types.h>
#include <vector>

namespace parallax::testing {

struct ProcessResult {
    int exitCode = -1;      // 128 + signal when killed
    std::string output;     // stdout and stderr interleaved
};

// Runs argv[0] (searched in PATH) to completion, capturing its output.
ProcessResult runProcess(const std::vector<std::string>& argv);

// A process started in the background with its output going to a file.
struct BackgroundProcess {
    pid_t pid = 0;
    std::string outputFile;
    int wait();              // exit code (128 + signal when killed)
    std::string output() const;
};
BackgroundProcess startProcess(const std::vector<std::string>& argv, const std::string& outputFile);

// A scratch folder removed at destruction.
class TempDir {
public:
    TempDir();
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    const std::string& path() const { return m_path; }

private:
    std::string m_path;
};

std::string buildDir();  // PARALLAX_BUILD_DIR
std::string sourceDir(); // PARALLAX_SOURCE_DIR

// Pids of live processes whose command line contains `needle` (from /proc).
std::vector<pid_t> processesMatching(const std::string& needle);

} // namespace parallax::testing
