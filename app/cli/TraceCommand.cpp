#include "app/cli/CliError.h"
#include "app/cli/Commands.h"
#include "core/store/TraceExport.h"
#include "core/util/Files.h"

#include <cstdio>
#include <iostream>
#include <sstream>

namespace parallax {

int traceCommand(const std::string& storePath, const std::string& run, const std::string& outPath) {
    RunStore store(storePath);
    const RunRecord r = requireRun(store, run);
    std::ostringstream text;
    const TraceCounts counts = writeTrace(store, r.id, text);
    if (outPath == "-") {
        std::cout << text.str();
        std::cout.flush();
        if (!std::cout) throw CliError("the trace could not be written to standard output");
        return ExitCode::Ok;
    }
    try {
        writeFileAtomic(outPath, text.str());
    } catch (const std::exception& e) {
        throw CliError("the trace could not be written to " + outPath + ": " + e.what());
    }
    std::fprintf(stderr,
                 "run %lld: %lld spans, %lld steps, %lld rank steps, %lld checkpoints, %lld flight-recorder "
                 "heartbeats, %lld log lines -> %s (open it in ui.perfetto.dev or chrome://tracing)\n",
                 static_cast<long long>(r.id), static_cast<long long>(counts.spans), static_cast<long long>(counts.steps),
                 static_cast<long long>(counts.rankSteps), static_cast<long long>(counts.checkpoints),
                 static_cast<long long>(counts.comms), static_cast<long long>(counts.logs), outPath.c_str());
    return ExitCode::Ok;
}

} // namespace parallax
