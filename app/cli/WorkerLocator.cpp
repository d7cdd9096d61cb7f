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

void execBeside(const std::string& name, const std::vector<std::string>& args, const std::string& missing) {
    const std::string tool = (fs::path(selfExecutable()).parent_path() / name).string();
    if (access(tool.c_str(), X_OK) != 0)
        throw CliError(name + " not found beside parallax-cli (" + tool + "); " + missing);
    std::vector<std::string> words = {tool};
    words.insert(words.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& w : words) argv.push_back(w.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    throw CliError("cannot run " + tool);
}

} // namespace parallax
