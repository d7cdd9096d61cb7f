#pragma once

#include "core/launch/LineBuffer.h"
#include "core/launch/OutputDemux.h"
#include "core/telemetry/TelemetryCodec.h"

#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace parallax {

class BatchedWriter;

// The supervisor's path for every byte the launcher prints: cut into lines per pipe, copied raw to
// output.log, cleaned to UTF-8, demultiplexed into ranks, decoded, and written through the
// BatchedWriter as telemetry or as log rows (rank, host, stream, guessed level; malformed telemetry
// as a warn row of its rank). It remembers what the supervisor decides with: the latest step, the
// run_end event, the launcher's failure report. A bad line never throws; a store error is handed
// to the error handler and the row stays with the writer.
class OutputRouter {
public:
    OutputRouter(BatchedWriter& writer, LauncherFormat format, std::string localHost, bool localTarget);

    void setRawLog(std::FILE* file) { m_rawLog = file; }
    void setErrorHandler(std::function<void(const std::exception&)> handler) { m_onError = std::move(handler); }

    // Bytes read from a pipe at wall-clock time `now` (seconds since the epoch).
    void append(OutputStream pipe, const char* data, size_t size, double now);
    // The pipe closed: its unfinished last line.
    void finishPipe(OutputStream pipe, double now);
    // The output ended: rank lines left incomplete, and the failure parser's open block.
    void finish(double now);

    std::string hostOfRank(int rank) const;
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
    std::FILE* m_rawLog = nullptr;
    std::function<void(const std::exception&)> m_onError;

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
