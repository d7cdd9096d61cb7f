#include "core/launch/OutputDemux.h"

#include <cstring>

namespace parallax {

const char* streamName(OutputStream s) { return s == OutputStream::Stderr ? "stderr" : "stdout"; }

namespace {

// Reads decimal digits; false when there are none or the value does not fit in an int.
bool readNumber(std::string_view s, size_t& pos, int& out) {
    const size_t begin = pos;
    int64_t v = 0;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
        v = v * 10 + (s[pos] - '0');
        if (v > 0x7fffffff)
            return false;
        ++pos;
    }
    out = static_cast<int>(v);
    return pos > begin;
}

} // namespace

std::optional<OutputDemux::Tag> OutputDemux::parseOpenMpiTag(std::string_view text) {
    // [<job>,<rank>]<stdout|stderr|stddiag>:
    if (text.size() < 14 || text[0] != '[')
        return std::nullopt;
    size_t pos = 1;
    int job = 0;
    Tag tag;
    if (!readNumber(text, pos, job) || pos >= text.size() || text[pos] != ',')
        return std::nullopt;
    ++pos;
    if (!readNumber(text, pos, tag.rank) || text.substr(pos, 5) != "]<std")
        return std::nullopt;
    pos += 5;
    const std::string_view rest = text.substr(pos);
    if (rest.substr(0, 5) == "out>:") {
        tag.stream = OutputStream::Stdout;
    } else if (rest.substr(0, 5) == "err>:") {
        tag.stream = OutputStream::Stderr;
    } else if (rest.substr(0, 6) == "diag>:") {
        tag.stream = OutputStream::Stderr;
        ++pos;
    } else {
        return std::nullopt;
    }
    tag.length = pos + 5;
    return tag;
}

std::optional<OutputDemux::Tag> OutputDemux::parseSlurmLabel(std::string_view text) {
    size_t pos = 0;
    while (pos < text.size() && text[pos] == ' ')
        ++pos;
    Tag tag;
    if (!readNumber(text, pos, tag.rank) || pos >= text.size() || text[pos] != ':')
        return std::nullopt;
    ++pos;
    if (pos < text.size() && text[pos] == ' ')
        ++pos;
    tag.length = pos;
    return tag;
}

DemuxedLine OutputDemux::parseLine(LauncherFormat format, OutputStream pipe, std::string_view line) {
    const std::optional<Tag> tag =
        format == LauncherFormat::OpenMpi ? parseOpenMpiTag(line) : parseSlurmLabel(line);
    if (!tag)
        return DemuxedLine{-1, pipe, line};
    // srun labels say nothing about the stream: it is the pipe's.
    return DemuxedLine{tag->rank, format == LauncherFormat::OpenMpi ? tag->stream : pipe, line.substr(tag->length)};
}

void OutputDemux::deliver(int rank, OutputStream stream, std::string_view payload, const Sink& sink) {
    if (rank < 0)
        m_failures.feed(payload);
    sink(DemuxedLine{rank, stream, payload});
}

void OutputDemux::feed(OutputStream pipe, std::string_view line, const Sink& sink) {
    if (m_format == LauncherFormat::OpenMpi) {
        feedOpenMpi(pipe, line, sink);
        return;
    }
    const DemuxedLine d = parseLine(m_format, pipe, line);
    deliver(d.rank, d.stream, d.payload.substr(0, kMaxLine), sink);
}

void OutputDemux::feedOpenMpi(OutputStream pipe, std::string_view line, const Sink& sink) {
    int rank = -1;
    OutputStream stream = pipe;
    std::string_view rest = line;
    if (const std::optional<Tag> tag = parseOpenMpiTag(line)) {
        rank = tag->rank;
        stream = tag->stream;
        rest = line.substr(tag->length);
    }
    // Find the chunk boundaries: tags after the first.
    for (;;) {
        size_t next = std::string_view::npos;
        std::optional<Tag> nextTag;
        for (size_t at = rest.find('['); at != std::string_view::npos; at = rest.find('[', at + 1)) {
            if ((nextTag = parseOpenMpiTag(rest.substr(at)))) {
                next = at;
                break;
            }
        }
        if (!nextTag)
            break;
        // rest[0, next) is an unfinished chunk of (rank, stream).
        std::string& partial = m_partial[{rank, static_cast<int>(stream)}];
        if (partial.size() < kMaxLine)
            partial.append(rest.data(), std::min(next, kMaxLine - partial.size()));
        rank = nextTag->rank;
        stream = nextTag->stream;
        rest = rest.substr(next + nextTag->length);
    }
    // The last chunk ends with the newline: it completes the line of (rank, stream).
    if (!m_partial.empty()) {
        const auto it = m_partial.find({rank, static_cast<int>(stream)});
        if (it != m_partial.end()) {
            m_joined.swap(it->second);
            m_partial.erase(it);
            if (m_joined.size() < kMaxLine)
                m_joined.append(rest.data(), std::min(rest.size(), kMaxLine - m_joined.size()));
            deliver(rank, stream, m_joined, sink);
            m_joined.clear();
            return;
        }
    }
    deliver(rank, stream, rest.substr(0, kMaxLine), sink);
}

void OutputDemux::finish(const Sink& sink) {
    std::map<std::pair<int, int>, std::string> partial;
    partial.swap(m_partial);
    for (const auto& [key, text] : partial)
        deliver(key.first, static_cast<OutputStream>(key.second), text, sink);
    m_failures.finish();
}

} // namespace parallax
