#include "app/cli/CliError.h"
#include "app/cli/Commands.h"
#include "app/cli/WorkerLocator.h"

#include <cstdio>
#include <filesystem>

namespace parallax {

int exportCommand(const std::string& storePath, const ExportCommandOptions& o) {
    const RunRecord run = [&] {
        RunStore store(storePath);
        return requireRun(store, o.run);
    }(); // closed before the exporter replaces this process
    std::vector<std::string> args = {run.run_dir, o.out, "--max-shard-size", o.max_shard_size};
    if (o.step >= 0) {
        char step[32];
        std::snprintf(step, sizeof step, "step_%08lld", static_cast<long long>(o.step));
        args.insert(args.end(), {"--checkpoint", (std::filesystem::path(run.run_dir) / "checkpoints" / step).string()});
    }
    if (o.fp32) args.push_back("--fp32");
    if (!o.merge) args.push_back("--adapter-only");
    execBeside("parallax-export", args, "it is built with the worker (cmake -DPARALLAX_WORKER=ON)");
}

} // namespace parallax
