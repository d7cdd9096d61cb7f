#include "app/cli/Commands.h"
#include "app/cli/WorkerLocator.h"

namespace parallax {

int cacheCommand(const CacheCommandOptions& o) {
    std::vector<std::string> args = {o.spec, "--device", o.device};
    if (o.bf16) args.push_back("--bf16");
    execBeside("parallax-cache", args,
               "it is built with the worker where the tokenizer and image decoders are (cmake -DPARALLAX_WORKER=ON; "
               "packaging/deps.sh installs PCRE2, ICU and the image libraries)");
}

} // namespace parallax
