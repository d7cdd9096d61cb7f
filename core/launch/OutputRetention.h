#pragma once

#include "core/launch/NoticeSink.h"
#include "core/launch/RawOutput.h"

#include <cstdint>
#include <functional>
#include <optional>

namespace parallax {

// Keeps a run's raw output within retention.output_keep_mb: once its segments together pass that,
// the oldest ones are removed, each only when every one of its bytes has its rows in the store
// (the store's output offset is at or past its end: none of its lines waits to be imported), never
// the one being written. Each removal is said in the run's log.
class OutputRetention {
public:
    // `storedOffset` asks the store how far into the output its rows are (RunStore::outputOffset);
    // nullopt when it cannot tell now (the store is locked): nothing is removed then.
    OutputRetention(RawOutputWriter& writer, int64_t keepBytes, NoticeSink& notices,
                    std::function<std::optional<int64_t>()> storedOffset);

    // Removes what may go now; returns how many segments were removed.
    int prune();
    int64_t keptBytes() const; // the compressed bytes of the segments left

private:
    bool overBudget() const;

    RawOutputWriter& m_writer;
    int64_t m_keepBytes;
    NoticeSink& m_notices;
    std::function<std::optional<int64_t>()> m_storedOffset;
};

} // namespace parallax
