#pragma once

#include <QByteArray>
#include <QStringList>

#include <vector>

namespace parallax {

// What a plot shows, as a table: a header naming the columns (x first, then one per curve) and
// rows of cells; an empty cell is a curve without a point at that x.
struct PlotTable {
    QStringList header;
    std::vector<QStringList> rows;

    // RFC 4180: a cell with a comma, quote or line break is quoted, quotes doubled; CRLF-free.
    QByteArray toCsv() const;
};

} // namespace parallax
