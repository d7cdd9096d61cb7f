#pragma once

#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>

namespace parallax {

// Cuts the bytes read from one pipe into lines. Reads end anywhere, so the tail of each read waits
// for the next. A line longer than `maxLine` is cut there and the rest of it, up to its newline,
// dropped (truncated() counts such lines), so that a rank printing without newlines cannot make
// the supervisor's memory grow without bound.
class LineBuffer {
public:
    explicit LineBuffer(size_t maxLine = 64 * 1024 * 1024) : m_maxLine(maxLine) {}

    // Calls onLine(std::string_view) for every line completed by `data`, without '\n' or a '\r'
    // before it.
    template <class F>
    void append(const char* data, size_t size, F&& onLine) {
        size_t pos = 0;
        while (pos < size) {
            const void* nl = std::memchr(data + pos, '\n', size - pos);
            const size_t end = nl ? static_cast<size_t>(static_cast<const char*>(nl) - data) : size;
            if (m_discarding) {
                if (nl) {
                    m_discarding = false;
                }
                pos = nl ? end + 1 : size;
                continue;
            }
            if (!nl) {
                keep(data + pos, end - pos, onLine);
                return;
            }
            if (m_pending.empty()) {
                if (end - pos > m_maxLine) {
                    deliver(std::string_view(data + pos, m_maxLine), onLine);
                    ++m_truncated;
                } else {
                    deliver(std::string_view(data + pos, end - pos), onLine);
                }
            } else {
                keep(data + pos, end - pos, onLine);
                if (!m_discarding) {
                    deliver(m_pending, onLine);
                } else {
                    m_discarding = false;
                }
                m_pending.clear();
            }
            pos = end + 1;
        }
    }

    // The pipe closed: the unfinished last line, if any.
    template <class F>
    void finish(F&& onLine) {
        if (!m_pending.empty())
            deliver(m_pending, onLine);
        m_pending.clear();
        m_discarding = false;
    }

    size_t truncated() const { return m_truncated; }
    size_t pendingBytes() const { return m_pending.size(); }

private:
    template <class F>
    void deliver(std::string_view line, F& onLine) {
        if (!line.empty() && line.back() == '\r')
            line.remove_suffix(1);
        onLine(line);
    }

    // Holds a piece of an unfinished line; at the limit, delivers what fits and drops the rest.
    template <class F>
    void keep(const char* data, size_t size, F& onLine) {
        if (m_pending.size() + size <= m_maxLine) {
            m_pending.append(data, size);
            return;
        }
        m_pending.append(data, m_maxLine - m_pending.size());
        deliver(m_pending, onLine);
        m_pending.clear();
        m_discarding = true;
        ++m_truncated;
    }

    size_t m_maxLine;
    std::string m_pending;
    bool m_discarding = false;
    size_t m_truncated = 0;
};

} // namespace parallax
