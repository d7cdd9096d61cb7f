#include "app/cli/CliError.h"
#include "app/cli/Commands.h"
#include "core/launch/OutputImport.h"
#include "core/launch/RunFolderImport.h"

#include <filesystem>
#include <iostream>

namespace parallax {

int importCommand(const std::string& storePath, const std::string& run) {
    std::error_code ec;
    // A folder: runs brought in from their folders (from a damaged or lost store).
    if (run.find('/') != std::string::npos || std::filesystem::is_directory(run, ec)) {
        RunStore store(storePath);
        try {
            for (const std::string& line : importRunFolders(store, run)) std::cout << line << std::endl;
        } catch (const StoreError&) {
            throw;
        } catch (const std::exception& e) {
            throw CliError(e.what());
        }
        return ExitCode::Ok;
    }
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
