#include "ui/models/PlotTable.h"

namespace parallax {

namespace {

QString csvCell(const QString& cell) {
    if (!cell.contains(QChar(',')) && !cell.contains(QChar('"')) && !cell.contains(QChar('\n')) &&
        !cell.contains(QChar('\r')))
        return cell;
    QString quoted = cell;
    quoted.replace(QStringLiteral("\""), QStringLiteral("\"\""));
    return QChar('"') + quoted + QChar('"');
}

QString csvLine(const QStringList& cells) {
    QStringList out;
    out.reserve(cells.size());
    for (const QString& c : cells) out << csvCell(c);
    return out.join(QChar(',')) + QChar('\n');
}

} // namespace

QByteArray PlotTable::toCsv() const {
    QString text = csvLine(header);
    for (const QStringList& row : rows) text += csvLine(row);
    return text.toUtf8();
}

} // namespace parallax
