#include "app/cli/CliError.h"
#include "app/cli/Commands.h"
#include "app/cli/WorkerLocator.h"

#include <cstdio>
#include <filesystem>
#include <unistd.h>

namespace parallax {

int exportCommand(const std::string& storePath, const ExportCommandOptions& o) {
    const RunRecord run = [&] {
        RunStore store(storePath);
        return requireRun(store, o.run);
    }(); // closed before the exporter replaces this process
    const std::string exporter =
        (std::filesystem::path(selfExecutable()).parent_path() / "parallax-export").string();
    if (access(exporter.c_str(), X_OK) != 0)
        throw CliError("parallax-export not found beside parallax-cli (" + exporter +
                       "); it is built with the worker (cmake -DPARALLAX_WORKER=ON)");
    std::vector<std::string> words = {exporter, run.run_dir, o.out, "--max-shard-size", o.max_shard_size};
    if (o.step >= 0) {
        char step[32];
        std::snprintf(step, sizeof step, "step_%08lld", static_cast<long long>(o.step));
        words.insert(words.end(), {"--checkpoint", (std::filesystem::path(run.run_dir) / "checkpoints" / step).string()});
    }
    if (o.fp32) words.push_back("--fp32");
    if (!o.merge) words.push_back("--adapter-only");
    std::vector<char*> argv;
    for (std::string& w : words) argv.push_back(w.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    throw CliError("cannot run " + exporter);
}

} // namespace parallax
