#include "ui/models/SpanModel.h"

#include "core/spec/ScheduleInfo.h"

#include <QBrush>
#include <QColor>
#include <QFont>

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace parallax {

namespace {

QString milliseconds(double seconds) { return QStringLiteral("%1 ms").arg(seconds * 1e3, 0, 'f', 2); }

} // namespace

SpanModel::SpanModel(QObject* parent) : QAbstractTableModel(parent) {}

QString SpanModel::percent(double fraction) { return QStringLiteral("%1%").arg(fraction * 100.0, 0, 'f', 1); }

QString SpanModel::rankRanges(std::vector<int> ranks) {
    std::sort(ranks.begin(), ranks.end());
    ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
    QStringList parts;
    for (size_t i = 0; i < ranks.size();) {
        size_t j = i;
        while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
        parts << (j == i ? QString::number(ranks[i]) : QStringLiteral("%1-%2").arg(ranks[i]).arg(ranks[j]));
        i = j + 1;
    }
    return parts.join(QStringLiteral(", "));
}

void SpanModel::setSchedule(const std::optional<Schedule>& schedule, const QString& why) {
    m_schedule = schedule;
    m_scheduleWhy = why;
    m_theoretical.reset();
    m_theoreticalNote.clear();
    if (!schedule) {
        m_theoreticalNote = why.isEmpty() ? tr("the run's schedule is not known") : why;
    } else {
        try {
            m_theoretical = PipelineBubbles::theoretical(schedule->stages, schedule->microbatches, schedule->kind,
                                                         schedule->virtualStages);
        } catch (const std::invalid_argument& e) {
            m_theoreticalNote = QString::fromStdString(e.what());
        }
    }
    recompute();
    if (rowCount() > 0) emit dataChanged(index(0, 0), index(rowCount() - 1, ColumnCount - 1));
}

void SpanModel::setSpans(int64_t step, std::vector<SpanEvent> spans) {
    beginResetModel();
    m_step = step;
    m_spans = std::move(spans);
    try {
        m_bubbles = PipelineBubbles::measure(m_spans);
    } catch (const std::invalid_argument&) {
        // Rows of another step mixed in: measure only the step asked for.
        std::vector<SpanEvent> own;
        for (const SpanEvent& s : m_spans)
            if (s.step == step) own.push_back(s);
        m_bubbles = PipelineBubbles::measure(own);
    }
    recompute();
    endResetModel();
}

void SpanModel::clear() { setSpans(-1, {}); }

void SpanModel::recompute() {
    m_problems.clear();
    if (m_spans.empty()) return;
    int micro = 0, chunks = 0;
    if (m_schedule && m_schedule->microbatches > 0) {
        micro = int(m_schedule->microbatches);
        chunks = int(parallax::modelChunks(m_schedule->kind, m_schedule->virtualStages));
    }
    m_problems = PipelineBubbles::checkOrder(m_spans, micro, chunks);
}

int SpanModel::rowCount(const QModelIndex& parent) const {
    if (parent.isValid() || m_bubbles.empty()) return 0;
    return int(m_bubbles.stages.size()) + 1;
}

int SpanModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QString SpanModel::theoryFormula() const {
    return QString::fromStdString(parallax::bubbleFormula(m_schedule->kind, m_schedule->stages, m_schedule->microbatches,
                                                          m_schedule->virtualStages));
}

QVariant SpanModel::value(int row, int column) const {
    const bool overall = row == overallRow();
    const PipelineBubbles::Stage* stage = overall ? nullptr : &m_bubbles.stages[size_t(row)];
    const double measured = overall ? m_bubbles.overall : stage->fraction;
    auto meanOverStages = [&](double PipelineBubbles::Stage::*field) {
        double sum = 0;
        for (const PipelineBubbles::Stage& s : m_bubbles.stages) sum += s.*field;
        return sum / double(m_bubbles.stages.size());
    };
    switch (column) {
    case StageColumn: return overall ? QVariant() : QVariant(stage->stage);
    case RanksColumn: return overall ? m_bubbles.rankCount() : int(stage->ranks.size());
    case BusyColumn: return overall ? meanOverStages(&PipelineBubbles::Stage::busy) : stage->busy;
    case IdleColumn:
        return m_bubbles.window() - (overall ? meanOverStages(&PipelineBubbles::Stage::busy) : stage->busy);
    case BlockedColumn: return overall ? meanOverStages(&PipelineBubbles::Stage::blocked) : stage->blocked;
    case MeasuredColumn: return measured;
    case TheoreticalColumn: return m_theoretical ? QVariant(*m_theoretical) : QVariant();
    case ExcessColumn: return m_theoretical ? QVariant(measured - *m_theoretical) : QVariant();
    default: return {};
    }
}

QVariant SpanModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= rowCount() || index.column() >= ColumnCount) return {};
    const int row = index.row();
    const int column = index.column();
    const bool overall = row == overallRow();
    const PipelineBubbles::Stage* stage = overall ? nullptr : &m_bubbles.stages[size_t(row)];
    switch (role) {
    case ValueRole: return value(row, column);
    case Qt::DisplayRole: {
        const QVariant v = value(row, column);
        switch (column) {
        case StageColumn: return overall ? tr("All stages") : tr("Stage %1").arg(stage->stage);
        case RanksColumn: {
            if (overall) return QString::number(m_bubbles.rankCount());
            std::vector<int> ranks;
            for (const PipelineBubbles::Rank& r : stage->ranks) ranks.push_back(r.rank);
            return rankRanges(ranks);
        }
        case BusyColumn:
        case IdleColumn:
        case BlockedColumn: return milliseconds(v.toDouble());
        case MeasuredColumn:
        case TheoreticalColumn: return v.isValid() ? percent(v.toDouble()) : QStringLiteral("—");
        case ExcessColumn:
            return v.isValid() ? QStringLiteral("%1%2 pp").arg(v.toDouble() >= 0 ? QStringLiteral("+") : QString())
                                     .arg(v.toDouble() * 100.0, 0, 'f', 1)
                               : QStringLiteral("—");
        default: return {};
        }
    }
    case Qt::TextAlignmentRole:
        return column == StageColumn ? QVariant(Qt::AlignLeft | Qt::AlignVCenter)
                                     : QVariant(Qt::AlignRight | Qt::AlignVCenter);
    case Qt::FontRole:
        if (overall) {
            QFont f;
            f.setBold(true);
            return f;
        }
        return {};
    case Qt::ToolTipRole:
        switch (column) {
        case MeasuredColumn: {
            if (overall)
                return tr("Mean of the stages' bubbles over the common window of %1 ms")
                    .arg(m_bubbles.window() * 1e3, 0, 'f', 2);
            QStringList lines;
            lines << tr("1 - busy / window, averaged over the stage's ranks");
            if (stage->ranks.size() > 1)
                lines << tr("ranks range from %1 to %2").arg(percent(stage->minFraction), percent(stage->maxFraction));
            for (size_t i = 0; i < stage->ranks.size() && i < 16; ++i)
                lines << tr("rank %1: %2").arg(stage->ranks[i].rank).arg(percent(stage->ranks[i].fraction));
            return lines.join(QChar('\n'));
        }
        case TheoreticalColumn:
        case ExcessColumn:
            if (!m_theoretical) return m_theoreticalNote;
            return theoryFormula();
        case BlockedColumn: return tr("Idle time spent blocked in a receive or draining sends");
        case IdleColumn: return tr("Window minus busy time");
        case BusyColumn: return tr("Forward and backward time (overlaps counted once)");
        default: return {};
        }
    case Qt::ForegroundRole:
        if (column == ExcessColumn && m_theoretical) {
            const double excess = value(row, column).toDouble();
            if (excess > 0.05) return QBrush(QColor(0xc6, 0x28, 0x28));
        }
        return {};
    default: return {};
    }
}

QVariant SpanModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal) return {};
    if (role == Qt::DisplayRole) {
        switch (section) {
        case StageColumn: return tr("Stage");
        case RanksColumn: return tr("Ranks");
        case BusyColumn: return tr("Busy");
        case IdleColumn: return tr("Idle");
        case BlockedColumn: return tr("In recv/send");
        case MeasuredColumn: return tr("Measured bubble");
        case TheoreticalColumn: return tr("Theoretical");
        case ExcessColumn: return tr("Excess");
        default: return {};
        }
    }
    if (role == Qt::ToolTipRole && section == ExcessColumn)
        return tr("Measured minus theoretical bubble, in percentage points");
    return {};
}

} // namespace parallax
