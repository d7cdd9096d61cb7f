#pragma once

#include "core/store/StoreConnection.h"
#include "core/telemetry/Events.h"

#include <cstdint>
#include <vector>

namespace parallax {

// A run's pipeline spans. Not a generated table (EventTables.h): the spans of one step and rank are
// one row of packed records (SpanChunk), where a profiled step brings a few dozen spans per rank
// that would otherwise be as many rows keyed by seven columns. Spans a schema 2 or earlier store
// wrote, one row each in `spans`, are read with them.
class SpanTable {
public:
    explicit SpanTable(StoreConnection& connection);

    void insertSpans(int64_t run, const std::vector<SpanEvent>& rows);
    std::vector<int64_t> spanSteps(int64_t run) const;
    std::vector<SpanEvent> spans(int64_t run, int64_t step) const;
    void deleteRunRows(int64_t run);

private:
    StoreConnection& m_c;
    SqlStatement m_insertChunk;
};

} // namespace parallax
