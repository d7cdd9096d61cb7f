#pragma once

#include "core/launch/LineBuffer.h"
#include "core/launch/OutputDemux.h"
#include "core/store/StoreTypes.h"
#include "core/telemetry/TelemetryCodec.h"

#include <cstdio>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace parallax {

class BatchedWriter;
class RawOutputWriter;

// The supervisor's path for every byte the launcher prints: cut into lines per pipe, copied raw to
// output.log, cleaned to UTF-8, demultiplexed into ranks, decoded, and written through the
// BatchedWriter as telemetry or as log rows (rank, host, stream, guessed level; malformed telemetry
// as a warn row of its rank). It remembers what the supervisor decides with: the latest step, the
// run_end event, the launcher's failure report. A bad line never throws; a store error is handed
// to the error handler and the row stays with the writer.
class OutputRouter {
public:
    OutputRouter(BatchedWriter& writer, LauncherFormat format, std::string localHost, bool localTarget);

    // The raw copy (output.log.gz, RawOutput.h) is also the spool of rows the store did not take:
    // every byte of it up to storedThrough() has its rows with the writer (pending or written),
    // the rest can be imported from the file (OutputImport).
    void setRawLog(RawOutputWriter* file, std::string path = {}) {
        m_rawLog = file;
        m_rawPath = std::move(path);
    }
    void setErrorHandler(std::function<void(const std::exception&)> handler) { m_onError = std::move(handler); }
    // Called for every telemetry event decoded (also while spooling), after the router's own use of it.
    void setEventHandler(std::function<void(const TelemetryEvent&)> handler) { m_onEvent = std::move(handler); }
    // Called for each `log` event of level warn or error a rank reports (a damaged checkpoint
    // skipped, a stop that could not checkpoint...), which a person at the terminal should see.
    void setRankWarningHandler(std::function<void(const LogEvent&)> handler) { m_onRankWarning = std::move(handler); }
    // Called for every line of a rank (its number), telemetry or not: a sign that its host lives.
    void setRankLineHandler(std::function<void(int)> handler) { m_onRankLine = std::move(handler); }
    // Called once, with the error's text, when output.log cannot be written (e.g. the disk is full).
    void setRawLogErrorHandler(std::function<void(const std::string&)> handler) { m_onRawError = std::move(handler); }

    // When the writer holds `rows` or more (the store has refused them for a while), lines are no
    // longer turned into rows but only kept in output.log, until resumeStoring(); 0: never.
    void setSpoolAbove(size_t rows) { m_spoolAbove = rows; }
    bool spooling() const { return m_spooling; }
    // The rows of the lines spooled were imported from output.log: rows are handed on again.
    void resumeStoring();
    // Bytes written to output.log so far, and how many of them have their rows with the writer.
    // Once output.log failed, storedThrough() is INT64_MAX: the file is no spool any more.
    int64_t rawBytes() const { return m_rawBytes; }
    int64_t storedThrough() const;
    // Writes output.log's buffer to the file; a failure is reported once (see above).
    void flushRawLog();
    // Hosts per rank when the run_start event came before this router saw the output (an import).
    void setRankHosts(std::vector<std::string> hosts) { m_rankHosts = std::move(hosts); }
    // The time of the latest event that carried one (0: none yet); lines of an import take it.
    double lastEventTime() const { return m_lastEventT; }

    // Bytes read from a pipe at wall-clock time `now` (seconds since the epoch).
    void append(OutputStream pipe, const char* data, size_t size, double now);
    // The pipe closed: its unfinished last line.
    void finishPipe(OutputStream pipe, double now);
    // The output ended: rank lines left incomplete, and the failure parser's open block.
    void finish(double now);

    std::string hostOfRank(int rank) const;
    // Bytes of `pipe` read but not yet a line (its unfinished last line).
    size_t pendingBytes(OutputStream pipe) const {
        return (pipe == OutputStream::Stdout ? m_outLines : m_errLines).pendingBytes();
    }
    const std::optional<StepEvent>& lastStep() const { return m_lastStep; }
    // Whether a step arrived since the last call.
    bool takeStepChanged();
    const std::optional<RunEndEvent>& runEnd() const { return m_runEnd; }
    const std::optional<LauncherFailure>& failure() const { return m_demux.failure(); }

private:
    void onPipeLine(OutputStream pipe, std::string_view line);
    void onRankLine(const DemuxedLine& d);
    void onEvent(const DemuxedLine& d);

    BatchedWriter& m_writer;
    OutputDemux m_demux;
    OutputDemux::Sink m_sink;
    std::string m_localHost;
    bool m_localTarget;
    void rawLogFailed(int error);
    bool handingOn(); // false while spooling
    void hand(const LogRow& row);
    void hand(const TelemetryEvent& event);

    RawOutputWriter* m_rawLog = nullptr;
    std::string m_rawPath;
    bool m_rawBroken = false;
    int64_t m_rawBytes = 0;
    size_t m_spoolAbove = 0;
    bool m_spooling = false;
    int64_t m_spooledFrom = 0;
    int64_t m_lineStart = 0; // offset in output.log of the line being routed
    double m_lastEventT = 0;
    std::function<void(const std::exception&)> m_onError;
    std::function<void(const std::string&)> m_onRawError;
    std::function<void(const LogEvent&)> m_onRankWarning;
    std::function<void(const TelemetryEvent&)> m_onEvent;
    std::function<void(int)> m_onRankLine;

    LineBuffer m_outLines;
    LineBuffer m_errLines;
    std::string m_cleanLine;
    DecodedLine m_decoded;
    double m_now = 0;
    std::vector<std::string> m_rankHosts;
    std::optional<StepEvent> m_lastStep;
    bool m_stepChanged = false;
    std::optional<RunEndEvent> m_runEnd;
};

} // namespace parallax
