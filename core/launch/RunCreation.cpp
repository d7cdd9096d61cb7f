#include "core/launch/RunCreation.h"

#include "core/launch/RawOutput.h"

#include "core/launch/OutputImport.h"
#include "core/launch/PrivateFile.h"
#include "core/launch/ProcessTable.h"
#include "core/spec/LayoutLabel.h"

#include <iostream>

namespace parallax {

void recoverLostRuns(RunStore& store, RunFolders& folders, const std::string& host,
                     const std::function<void()>& onPendingCleanup) {
    try {
        if (!store.pendingCleanups().empty() && onPendingCleanup)
            onPendingCleanup(); // hosts of earlier runs that did not answer: tried again
    } catch (const std::exception&) {
    }
    // Zombies count as ended: a supervisor killed after its parent exited may stay one for good.
    const auto alive = [](int64_t pid) { return processIsRunning(static_cast<pid_t>(pid)); };
    for (const int64_t id : store.markLostRuns(host, alive)) {
        try {
            const std::string done = recoverRunOutput(store, id, host);
            std::cerr << "parallax: " << done << "\n";
        } catch (const std::exception& e) {
            std::cerr << "parallax: run " << id << " was lost; its output was not imported: " << e.what() << "\n";
        }
    }
    try {
        for (const std::string& line : folders.migrateEarlierLayout())
            std::cerr << "parallax: run folders of " << store.path() << ": " << line << "\n";
    } catch (const std::exception& e) {
        std::cerr << "parallax: the run folders of " << store.path() << " were not moved to " << folders.root()
                  << ": " << e.what() << "\n";
    }
}

int64_t createRunRecord(RunStore& store, const PreparedRun& prepared, const std::vector<std::string>& tags) {
    const RunSpec& spec = prepared.spec.spec;
    NewRun nr;
    nr.name = spec.name;
    nr.spec_toml = prepared.spec.text;
    nr.model_kind = spec.model.kind.name();
    nr.layout = layoutLabel(spec.parallel);
    nr.steps_total = spec.train.steps;
    nr.world_size = static_cast<int>(spec.processCount());
    nr.parent_run = prepared.parent_run;
    nr.tags = tags;
    return store.createRun(nr);
}

RunFolder createRunFolder(RunFolders& folders, int64_t runId, const std::string& specText, bool slurmWrites) {
    const RunFolders::Created made = folders.create(runId);
    RunFolder folder;
    folder.dir = made.dir;
    folder.notice = made.notice;
    writePrivateFile(made.dir + "/spec.toml", specText);
    folder.output_log = createPrivateFile(made.dir + "/" + (slurmWrites ? "output.log" : kCompressedOutputName));
    std::setvbuf(folder.output_log, nullptr, _IOFBF, 1 << 20);
    return folder;
}

} // namespace parallax
