#pragma once

#include "core/store/StoreConnection.h"
#include "core/store/StoreTypes.h"

#include <cstdint>
#include <optional>
#include <string>

namespace parallax {

// The runs table: a run's row from its creation to its end, and what its supervisor records in it
// as the run goes (see RunStore for each call).
class RunsTable {
public:
    explicit RunsTable(StoreConnection& connection);

    int64_t createRun(const NewRun& run);
    void setRunDir(int64_t id, const std::string& dir);
    void relocateRunDir(int64_t id, const std::string& from, const std::string& to);
    void setLaunchCommand(int64_t id, const std::string& command);
    void setOutputOffset(int64_t id, int64_t offset);
    std::optional<int64_t> outputOffset(int64_t id) const;
    void setRunStart(int64_t id, const RunStartEvent& start);
    std::optional<RunStartEvent> runStart(int64_t id) const;
    void updateSummary(int64_t id, const StepEvent& lastStep);
    void finishRun(int64_t id, RunState state, std::optional<int> exitCode, const std::string& reason,
                   double endedAt);
    void setStartedAt(int64_t id, double startedAt);
    // The run's row, and the parent link of the runs resumed from it; throws when there is no such run.
    void deleteRunRows(int64_t id);

private:
    // UPDATE runs SET <column> = value: `column` is one of this file's names, never input.
    void setColumn(int64_t id, const char* column, const SqlStatement::Value& value, const char* what);

    StoreConnection& m_c;
    SqlStatement m_updateSummary; // after every batch of steps
};

} // namespace parallax
