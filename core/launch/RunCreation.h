#pragma once

#include "core/launch/RunFolders.h"
#include "core/launch/RunPreparation.h"
#include "core/store/RunStore.h"

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace parallax {

// Before a new run of this host is created: the runs of this host whose supervisor died are
// recorded as lost and their rows that output.log holds but the store does not are imported;
// hosts of earlier runs still to be cleaned are tried again (`onPendingCleanup`); run folders of
// the earlier layout are moved. What it did is said on stderr; nothing of it stops the new run.
void recoverLostRuns(RunStore& store, RunFolders& folders, const std::string& host,
                     const std::function<void()>& onPendingCleanup);

// The new run's row in the store (state queued), from its prepared spec.
int64_t createRunRecord(RunStore& store, const PreparedRun& prepared, const std::vector<std::string>& tags);

// The run's folder, made and recorded: spec.toml holding the spec's text as read (the ranks read
// it) and the file of the launcher's raw output, open, both readable by their owner only: the
// output.log sbatch writes (`slurmWrites`), else output.log.gz, which the supervisor writes
// through a RawOutputWriter (RawOutput.h).
struct RunFolder {
    std::string dir;
    std::FILE* output_log = nullptr; // the caller closes it
    std::string notice;              // non-empty: the folder of that id was taken, another was made
};
RunFolder createRunFolder(RunFolders& folders, int64_t runId, const std::string& specText, bool slurmWrites);

} // namespace parallax
