#include "app/cli/CliError.h"
#include "app/cli/Commands.h"
#include "core/launch/OutputImport.h"

#include <iostream>

namespace parallax {

int importCommand(const std::string& storePath, const std::string& run) {
    RunStore store(storePath);
    const RunRecord r = requireRun(store, run);
    markLostRunsIfWritable(store);
    try {
        std::cout << recoverRunOutput(store, r.id, thisHost()) << std::endl;
    } catch (const StoreError&) {
        throw;
    } catch (const std::exception& e) {
        throw CliError(e.what());
    }
    return ExitCode::Ok;
}

} // namespace parallax
