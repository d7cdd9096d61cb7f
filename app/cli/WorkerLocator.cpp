#include "app/cli/WorkerLocator.h"

#include "app/cli/CliError.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

namespace parallax {

namespace fs = std::filesystem;

std::string selfExecutable() {
    std::error_code ec;
    const fs::path self = fs::read_symlink("/proc/self/exe", ec);
    if (ec)
        throw CliError("cannot find this executable's path (/proc/self/exe): " + ec.message());
    return self.string();
}

std::string expectedWorkerPath() {
    if (const char* env = std::getenv("PARALLAX_WORKER"); env && *env)
        return env;
    return (fs::path(selfExecutable()).parent_path() / "parallax-worker").string();
}

std::string locateWorker() {
    const std::string path = expectedWorkerPath();
    if (access(path.c_str(), X_OK) == 0)
        return path;
    if (const char* env = std::getenv("PARALLAX_WORKER"); env && *env)
        throw CliError("PARALLAX_WORKER=" + path + " is not an executable file; point it at parallax-worker");
    throw CliError("parallax-worker not found beside parallax-cli (" + path +
                   "); build it (cmake -DPARALLAX_WORKER=ON) or set PARALLAX_WORKER to its path");
}

} // namespace parallax
