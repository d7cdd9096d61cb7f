#pragma once

#include "core/store/StoreConnection.h"
#include "core/telemetry/Events.h"

#include <cstdint>
#include <vector>

namespace parallax {

// A run's step metrics. Not a generated table (EventTables.h): a run of consecutive steps is one
// row of packed records (MetricChunk), which makes a step cost a few nanoseconds to store instead of
// the 2 µs of a row of 15 columns. Steps a schema 1 store wrote, one row each in `metrics`, are read
// with them.
class MetricTable {
public:
    explicit MetricTable(StoreConnection& connection);

    void insertMetrics(int64_t run, const std::vector<StepEvent>& rows);
    std::vector<StepEvent> metrics(int64_t run, int64_t afterStep) const;
    void deleteRunRows(int64_t run);

private:
    StoreConnection& m_c;
    SqlStatement m_insertChunk; // after every batch of steps
};

} // namespace parallax
