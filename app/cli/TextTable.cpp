#include "app/cli/TextTable.h"

#include "core/launch/Utf8.h"

#include <algorithm>

namespace parallax {

namespace {

// Display width: UTF-8 continuation bytes take no column.
size_t width(const std::string& s) {
    return static_cast<size_t>(std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

} // namespace

void TextTable::addColumn(std::string header, Align align) {
    m_headers.push_back(std::move(header));
    m_align.push_back(align);
}

void TextTable::addRow(std::vector<std::string> cells) {
    cells.resize(m_headers.size());
    for (std::string& cell : cells) cell = terminalSafe(cell); // names and notes are anyone's text
    m_rows.push_back(std::move(cells));
}

void TextTable::print(std::ostream& out) const {
    std::vector<size_t> widths(m_headers.size());
    for (size_t c = 0; c < m_headers.size(); ++c) {
        widths[c] = width(m_headers[c]);
        for (const auto& row : m_rows)
            widths[c] = std::max(widths[c], width(row[c]));
    }
    auto printRow = [&](const std::vector<std::string>& cells) {
        std::string line;
        for (size_t c = 0; c < cells.size(); ++c) {
            const size_t pad = widths[c] - width(cells[c]);
            const bool last = c + 1 == cells.size();
            if (m_align[c] == Align::Right)
                line += std::string(pad, ' ') + cells[c];
            else
                line += cells[c] + (last ? std::string() : std::string(pad, ' '));
            if (!last)
                line += "  ";
        }
        out << line << '\n';
    };
    printRow(m_headers);
    for (const auto& row : m_rows)
        printRow(row);
}

} // namespace parallax
