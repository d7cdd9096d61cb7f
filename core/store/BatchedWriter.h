#pragma once

#include "core/store/EventTableRows.h"
#include "core/store/RunStore.h"
#include "core/telemetry/StepWindow.h"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace parallax {

class LogIndexer;

// Groups one run's telemetry rows into few transactions: rows wait in memory and are written in
// one short transaction when `maxRows` are pending, when maybeFlush() finds the oldest pending row
// older than `interval`, on flush(), and on destruction. Holding rows in memory rather than an open
// transaction keeps the store's write lock free between flushes for the other runs' supervisors.
//
// Nothing added is dropped: when a flush fails (the store stayed locked past its busy timeout, the
// disk is full) the transaction is rolled back, the rows stay pending for the next flush, and the
// StoreError propagates. The destructor flushes and reports a failure on stderr, since it cannot
// throw. Single-threaded: the supervisor calls it from its read loop.
//
// Log lines enter the store's full-text index on a thread of its own (LogIndexer) after each
// flush that wrote some, on two cores at the same time as the next rows are written; the
// destructor lets it finish (for a few seconds at most) and joins it. Searches index what is left
// anyway, so a line is always found; waitIndexed() waits until the index has caught up.
class BatchedWriter {
public:
    BatchedWriter(RunStore& store, int64_t run,
                  std::chrono::milliseconds interval = std::chrono::milliseconds(100),
                  size_t maxRows = 20000);
    ~BatchedWriter();
    BatchedWriter(const BatchedWriter&) = delete;
    BatchedWriter& operator=(const BatchedWriter&) = delete;

    void add(const StepEvent& e);       // also the run's summary (the batch's last step)
    void add(const SpanEvent& e);
    void add(const LogRow& row);
    void add(const RunStartEvent& e);   // RunStore::setRunStart, in the next flush
    void add(const HostStatus& h);      // RunStore::setHostStatus (the latest per host), in the next flush
    // An event kept in a table generated from its fields (RunStore::insertEvents): device samples,
    // comms, checkpoints, each rank's steps...
    template <class E, std::enable_if_t<hasEventTable<E>, int> = 0>
    void add(const E& e) {
        m_tableRows.add(e);
        rowAdded();
    }
    void add(const RunAlert& a);        // RunStore::setAlert (the latest per kind), in the next flush
    void add(const LogEvent& e);        // a log row of stream "telemetry" (host from run_start)
    // The row a `log` event becomes, host left empty.
    static LogRow logRow(const LogEvent& e);
    // The supervisor decides the run's final state (with the exit code); here the event becomes a
    // log line, so that the run's log says what the worker reported.
    void add(const RunEndEvent& e);
    void add(const TelemetryEvent& e);

    // Where the rows come from in the run's output.log: with each batch, the store records the
    // offset `source` returns then (RunStore::setOutputOffset), in the same transaction.
    void setOutputOffsetSource(std::function<int64_t()> source) { m_offsetSource = std::move(source); }

    // After a failed flush, automatic flushes (maybeFlush, and add() past maxRows) wait this long
    // before they try again, so that a store locked by someone else costs the caller one busy
    // timeout per `retryAfter`, not one per row. flush() always tries.
    void setRetryAfter(std::chrono::milliseconds retryAfter) { m_retryAfter = retryAfter; }
    // Since when flushes fail (std::nullopt: the last one succeeded).
    std::optional<std::chrono::steady_clock::time_point> failingSince() const { return m_failingSince; }

    // Writes the pending rows when the oldest is at least `interval` old. Returns whether it wrote.
    bool maybeFlush();
    void flush();
    // Waits until every log line flushed so far is in the full-text index. When the background
    // indexing failed (already reported on stderr), or the store is in memory (no second
    // connection can see it), indexes here and throws StoreError on failure. Rows still pending
    // are not written: flush() first.
    void waitIndexed();

    // Time until maybeFlush() would write (zero when due); std::nullopt with nothing pending. The
    // supervisor uses it as its poll timeout.
    std::optional<std::chrono::milliseconds> timeUntilDue() const;
    size_t pendingRows() const;
    int64_t run() const { return m_run; }
    RunStore& store() { return m_store; }

private:
    using Clock = std::chrono::steady_clock;
    void rowAdded();
    void indexSoon(); // after a flush that wrote log lines
    void failed();    // a flush failed: when to try again
    std::string hostOfRank(int rank) const;

    RunStore& m_store;
    int64_t m_run;
    std::chrono::milliseconds m_interval;
    size_t m_maxRows;

    std::vector<StepEvent> m_steps;
    std::vector<SpanEvent> m_spans;
    std::vector<LogRow> m_logs;
    std::optional<RunStartEvent> m_runStart;
    std::map<std::string, HostStatus> m_hostStatus;
    EventTableRows m_tableRows; // events with generated tables
    std::map<AlertKind, RunAlert> m_alerts;
    // The newest step for the run's summary row, its tokens/s the median of the last steps'
    // (StepWindow): the figure the run list and `ls` show.
    std::optional<StepEvent> m_summary;
    StepWindow m_pace;
    std::vector<std::string> m_rankHosts;
    size_t m_pending = 0; // rows in the vectors above (run start and summary not counted)
    std::optional<Clock::time_point> m_oldest;
    bool m_wroteLogs = false;
    std::unique_ptr<LogIndexer> m_indexer; // started by the first flush that writes log lines
    std::function<int64_t()> m_offsetSource;
    std::optional<int64_t> m_writtenOffset;
    std::chrono::milliseconds m_retryAfter{0};
    std::optional<Clock::time_point> m_retryAt;
    std::optional<Clock::time_point> m_failingSince;
};

} // namespace parallax
