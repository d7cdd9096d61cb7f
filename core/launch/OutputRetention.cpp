#include "core/launch/OutputRetention.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

namespace parallax {

namespace {

std::string mib(int64_t bytes) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / 1048576.0);
    return text;
}

} // namespace

OutputRetention::OutputRetention(RawOutputWriter& writer, int64_t keepBytes, NoticeSink& notices,
                                 std::function<std::optional<int64_t>()> storedOffset)
    : m_writer(writer), m_keepBytes(keepBytes), m_notices(notices), m_storedOffset(std::move(storedOffset)) {}

int64_t OutputRetention::keptBytes() const {
    int64_t total = 0;
    for (const RawOutputWriter::Segment& s : m_writer.segments()) total += s.compressed;
    return total;
}

bool OutputRetention::overBudget() const {
    return m_keepBytes > 0 && m_writer.segments().size() > 1 && keptBytes() > m_keepBytes;
}

int OutputRetention::prune() {
    if (!overBudget()) return 0;
    const std::optional<int64_t> stored = m_storedOffset();
    if (!stored) return 0;
    int removed = 0;
    while (overBudget()) {
        const RawOutputWriter::Segment oldest = m_writer.segments().front();
        // Lines of it the store has not taken (refused, spooled and not yet imported): it stays.
        if (oldest.to > *stored) break;
        if (std::remove(oldest.path.c_str()) != 0 && errno != ENOENT) {
            m_notices.notice(LogLevel::Warn, "output: " + oldest.path + " could not be removed (" + std::strerror(errno) +
                                                 "); the run's output is kept whole");
            m_keepBytes = 0;
            break;
        }
        m_writer.forgetOldestSegment();
        ++removed;
        m_notices.notice(LogLevel::Info, "output: removed " + oldest.path + " (" + mib(oldest.compressed) + ", bytes " +
                                             std::to_string(oldest.from) + " to " + std::to_string(oldest.to) +
                                             " of the output, every line in the store): the segments kept hold " +
                                             mib(keptBytes()) + ", retention.output_keep_mb = " +
                                             std::to_string(m_keepBytes / 1048576));
    }
    return removed;
}

} // namespace parallax
