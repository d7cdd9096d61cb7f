#include "ui/models/LayoutAdvice.h"

#include "core/spec/Estimates.h"

#include <QFont>
#include <QLocale>
#include <QRegularExpression>

#include <algorithm>

namespace parallax {

QStringList AdviseRunner::arguments(const QString& specPath, qint64 devices, int tries, double memoryLimitBytes) {
    QStringList args{QStringLiteral("advise"), specPath, QStringLiteral("--csv"), QStringLiteral("--devices"),
                     QString::number(devices), QStringLiteral("--try"), QString::number(tries)};
    if (memoryLimitBytes > 0)
        args << QStringLiteral("--memory-limit") << QString::number(static_cast<qint64>(memoryLimitBytes));
    return args;
}

QVector<LayoutAdviceRow> AdviseRunner::parse(const QString& output) {
    QVector<LayoutAdviceRow> rows;
    for (const QString& line : output.split(QChar('\n'))) {
        if (!line.startsWith(QLatin1String("dp"))) continue;
        const QStringList f = line.trimmed().split(QChar(','));
        if (f.size() != 7) continue;
        LayoutAdviceRow r;
        r.label = f[0];
        r.excluded = f[1];
        r.memoryBytes = f[2].toDouble();
        r.predictedMs = f[3].toDouble();
        r.tokensPerS = f[4].toDouble();
        r.measuredMs = f[5].toDouble();
        r.rank = f[6].toInt();
        rows.push_back(r);
    }
    return rows;
}

void AdviseRunner::start(const QString& specPath, qint64 devices, int tries, double memoryLimitBytes) {
    startCommand(arguments(specPath, devices, tries, memoryLimitBytes), {0});
}

void AdviseRunner::answered(int, const QString& output) {
    emit finished(parse(output));
}

void LayoutAdviceModel::setRows(QVector<LayoutAdviceRow> rows) {
    std::stable_sort(rows.begin(), rows.end(), [](const LayoutAdviceRow& a, const LayoutAdviceRow& b) {
        const auto key = [](const LayoutAdviceRow& r) {
            return std::make_tuple(r.rank > 0 ? 0 : r.excluded.isEmpty() ? 1 : 2, r.rank, r.predictedMs);
        };
        return key(a) < key(b);
    });
    beginResetModel();
    m_rows = std::move(rows);
    endResetModel();
}

std::optional<LayoutAdviceRow> LayoutAdviceModel::best() const {
    for (const LayoutAdviceRow& r : m_rows)
        if (r.rank == 1) return r;
    return std::nullopt;
}

int LayoutAdviceModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(m_rows.size());
}

int LayoutAdviceModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant LayoutAdviceModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= m_rows.size()) return {};
    const LayoutAdviceRow& r = m_rows[index.row()];
    const auto ms = [](double v) { return QStringLiteral("%1 ms").arg(QLocale().toString(v, 'f', 1)); };
    if (role == Qt::DisplayRole) {
        switch (index.column()) {
        case Layout: return r.label;
        case Memory: return r.memoryBytes > 0 ? QString::fromStdString(formatBytes(r.memoryBytes)) : QString();
        case Predicted: return r.excluded.isEmpty() ? ms(r.predictedMs) : QString();
        case Measured: return r.rank > 0 ? QLocale().toString(r.tokensPerS, 'f', 0) : QString();
        case MeasuredStep: return r.rank > 0 ? ms(r.measuredMs) : QString();
        case Verdict:
            return r.rank > 0            ? tr("#%1 measured").arg(r.rank)
                   : r.excluded.isEmpty() ? tr("not tried")
                                          : r.excluded;
        }
    }
    if (role == Qt::FontRole && r.rank == 1) {
        QFont bold;
        bold.setBold(true);
        return bold;
    }
    if (role == Qt::ToolTipRole && index.column() == Verdict) return r.excluded;
    if (role == Qt::TextAlignmentRole && index.column() != Layout && index.column() != Verdict)
        return int(Qt::AlignRight | Qt::AlignVCenter);
    return {};
}

QVariant LayoutAdviceModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
    switch (section) {
    case Layout: return tr("Layout");
    case Memory: return tr("Memory");
    case Predicted: return tr("Predicted step");
    case Measured: return tr("Tokens/s");
    case MeasuredStep: return tr("Measured step");
    case Verdict: return tr("Rank / why not");
    }
    return {};
}

bool applyLayoutLabel(const QString& label, RunSpec& spec) {
    static const QRegularExpression re(QStringLiteral("^dp(\\d+) tp(\\d+) pp(\\d+) zero(\\d+)$"));
    const QRegularExpressionMatch m = re.match(label);
    if (!m.hasMatch()) return false;
    spec.parallel.dp = m.captured(1).toLongLong();
    spec.parallel.tp = m.captured(2).toLongLong();
    spec.parallel.pp = m.captured(3).toLongLong();
    spec.parallel.zero = m.captured(4).toLongLong();
    spec.parallel.stage_layers.clear();
    spec.launch.processes.reset(); // dp x tp x pp
    if (spec.parallel.pp == 1) spec.parallel.virtual_stages = 1;
    return true;
}

} // namespace parallax
