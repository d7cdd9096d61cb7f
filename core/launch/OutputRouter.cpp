#include "core/launch/OutputRouter.h"

#include "core/launch/RawOutput.h"

#include "core/launch/LogLevelGuess.h"
#include "core/launch/Utf8.h"
#include "core/store/BatchedWriter.h"
#include "core/store/LogLevel.h"

#include <cerrno>
#include <cstring>
#include <iostream>

namespace parallax {

namespace {

constexpr size_t kMalformedEcho = 200; // bytes of a malformed line kept in its log row

template <typename Event>
double eventTime(const Event& e) {
    return e.t;
}
double eventTime(const SpanEvent&) { return 0; } // in rank 0's clock, not the wall's

} // namespace

OutputRouter::OutputRouter(BatchedWriter& writer, LauncherFormat format, std::string localHost, bool localTarget)
    : m_writer(writer), m_demux(format), m_localHost(std::move(localHost)), m_localTarget(localTarget) {
    m_sink = [this](const DemuxedLine& d) { onRankLine(d); };
}

void OutputRouter::append(OutputStream pipe, const char* data, size_t size, double now) {
    m_now = now;
    LineBuffer& lines = pipe == OutputStream::Stdout ? m_outLines : m_errLines;
    lines.append(data, size, [&](std::string_view line) { onPipeLine(pipe, line); });
}

void OutputRouter::finishPipe(OutputStream pipe, double now) {
    m_now = now;
    LineBuffer& lines = pipe == OutputStream::Stdout ? m_outLines : m_errLines;
    lines.finish([&](std::string_view line) { onPipeLine(pipe, line); });
}

void OutputRouter::finish(double now) {
    finishPipe(OutputStream::Stdout, now);
    finishPipe(OutputStream::Stderr, now);
    m_demux.finish(m_sink);
}

bool OutputRouter::takeStepChanged() {
    const bool changed = m_stepChanged;
    m_stepChanged = false;
    return changed;
}

std::string OutputRouter::hostOfRank(int rank) const {
    if (rank >= 0 && static_cast<size_t>(rank) < m_rankHosts.size() && !m_rankHosts[rank].empty())
        return m_rankHosts[rank];
    if (rank < 0 || m_localTarget)
        return m_localHost;
    return "";
}

void OutputRouter::rawLogFailed(int error) {
    if (m_rawBroken)
        return;
    m_rawBroken = true;
    if (m_onRawError)
        m_onRawError(std::string(std::strerror(error)) + " writing " + (m_rawPath.empty() ? "output.log" : m_rawPath) +
                     " after " + std::to_string(m_rawBytes) + " bytes; later lines of the ranks are kept in the "
                     "store only");
}

void OutputRouter::flushRawLog() {
    if (m_rawLog && !m_rawBroken && !m_rawLog->flush())
        rawLogFailed(errno);
}

int64_t OutputRouter::storedThrough() const {
    if (m_rawBroken)
        return INT64_MAX;
    return m_spooling ? m_spooledFrom : m_rawBytes;
}

void OutputRouter::resumeStoring() { m_spooling = false; }

bool OutputRouter::handingOn() {
    if (!m_spooling && !m_rawBroken && m_rawLog && m_spoolAbove > 0 && m_writer.pendingRows() >= m_spoolAbove) {
        // The file holds this line already (it is written before it is decoded): spooled from it.
        m_spooling = true;
        m_spooledFrom = m_lineStart;
    }
    return !m_spooling;
}

void OutputRouter::hand(const LogRow& row) {
    if (handingOn())
        m_writer.add(row);
}

void OutputRouter::hand(const TelemetryEvent& event) {
    if (handingOn())
        m_writer.add(event);
}

void OutputRouter::onPipeLine(OutputStream pipe, std::string_view line) {
    m_lineStart = m_rawBytes;
    if (m_rawLog && !m_rawBroken) {
        if (!m_rawLog->write(line.data(), line.size()) || !m_rawLog->write("\n", 1))
            rawLogFailed(errno);
        else
            m_rawBytes += static_cast<int64_t>(line.size()) + 1;
    }
    if (!isCleanUtf8(line)) {
        m_cleanLine = sanitizeUtf8(line);
        line = m_cleanLine;
    }
    m_demux.feed(pipe, line, m_sink);
}

void OutputRouter::onRankLine(const DemuxedLine& d) {
    if (m_onRankLine && d.rank >= 0)
        m_onRankLine(d.rank);
    try {
        decodeLine(d.payload, m_decoded);
        switch (m_decoded.kind) {
        case DecodedLine::Kind::Event: onEvent(d); break;
        case DecodedLine::Kind::Text: {
            LogRow row;
            row.t = m_now;
            row.rank = d.rank;
            row.host = hostOfRank(d.rank);
            row.level = guessLogLevel(d.payload);
            row.stream = streamName(d.stream);
            row.message.assign(d.payload.data(), d.payload.size());
            hand(row);
            break;
        }
        case DecodedLine::Kind::Malformed: {
            LogRow row;
            row.t = m_now;
            row.rank = d.rank;
            row.host = hostOfRank(d.rank);
            row.level = LogLevel::Warn;
            row.stream = streamName(d.stream);
            std::string_view echo = d.payload.substr(0, kMalformedEcho);
            // Do not cut a UTF-8 sequence in half.
            while (echo.size() < d.payload.size() && !echo.empty() &&
                   (static_cast<unsigned char>(d.payload[echo.size()]) & 0xC0) == 0x80)
                echo.remove_suffix(1);
            row.message = "malformed telemetry: " + m_decoded.error + ": " + std::string(echo) +
                          (echo.size() < d.payload.size() ? "..." : "");
            hand(row);
            break;
        }
        }
    } catch (const std::exception& e) {
        if (m_onError)
            m_onError(e);
        else
            std::cerr << "parallax: " << e.what() << "\n";
    }
}

void OutputRouter::onEvent(const DemuxedLine& d) {
    TelemetryEvent& event = m_decoded.event;
    const double t = std::visit([](const auto& e) { return eventTime(e); }, event);
    if (t > 0)
        m_lastEventT = t;
    if (auto* start = std::get_if<RunStartEvent>(&event)) {
        m_rankHosts = start->hosts;
    } else if (auto* step = std::get_if<StepEvent>(&event)) {
        m_lastStep = *step;
        m_stepChanged = true;
    } else if (auto* end = std::get_if<RunEndEvent>(&event)) {
        m_runEnd = *end;
    } else if (auto* log = std::get_if<LogEvent>(&event)) {
        if (log->rank < 0)
            log->rank = d.rank;
        if (log->t == 0)
            log->t = m_now;
        if (m_onRankWarning && LogLevel::fromName(log->level) >= LogLevel::Warn)
            m_onRankWarning(*log);
    }
    if (m_onEvent)
        m_onEvent(event);
    if (const auto* log = std::get_if<LogEvent>(&event)) {
        // The router knows a rank's host before run_start names it (on a local run, this host);
        // the writer learns hosts from run_start only, and ranks often log before rank 0 sends it.
        LogRow row = BatchedWriter::logRow(*log);
        row.host = hostOfRank(log->rank);
        hand(row);
        return;
    }
    hand(event);
}

} // namespace parallax
