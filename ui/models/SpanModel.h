#pragma once

#include "core/telemetry/Events.h"
#include "core/telemetry/PipelineBubbles.h"

#include <QAbstractTableModel>
#include <QString>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace parallax {

// One sampled step's pipeline spans and what they say: a row per stage with its ranks, busy and
// idle time, the time blocked in recv/send, the measured bubble next to the schedule's
// theoretical one and the difference; a last row for all stages together. Numbers come as text
// in DisplayRole and as plain values (seconds, fractions) in ValueRole.
class SpanModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column {
        StageColumn,
        RanksColumn,
        BusyColumn,
        IdleColumn,
        BlockedColumn,
        MeasuredColumn,
        TheoreticalColumn,
        ExcessColumn, // measured - theoretical, percentage points
        ColumnCount
    };
    enum Role { ValueRole = Qt::UserRole + 1 };

    // What the theoretical bubble is computed from (the run's spec).
    struct Schedule {
        int64_t stages = 0;        // parallel.pp
        int64_t microbatches = 0;  // RunSpec::accumulation()
        int64_t virtualStages = 1; // parallel.virtual_stages
        Choice<parallax::Schedule> kind{parallax::Schedule::OneFOneB}; // parallel.schedule
    };

    explicit SpanModel(QObject* parent = nullptr);

    // No schedule (a spec that cannot be read): no theoretical column values; `why` says so.
    void setSchedule(const std::optional<Schedule>& schedule, const QString& why = QString());
    const std::optional<Schedule>& schedule() const { return m_schedule; }
    std::optional<double> theoretical() const { return m_theoretical; }
    // Why there is no theoretical value (empty when there is one).
    QString theoreticalNote() const { return m_theoreticalNote; }

    void setSpans(int64_t step, std::vector<SpanEvent> spans);
    void clear();
    int64_t step() const { return m_step; }
    const std::vector<SpanEvent>& spans() const { return m_spans; }
    const PipelineBubbles& bubbles() const { return m_bubbles; }
    // PipelineBubbles::checkOrder with the schedule's micro-batches and chunks.
    const std::vector<std::string>& orderProblems() const { return m_problems; }
    // The row of all stages (the last one); -1 when there are no rows.
    int overallRow() const { return m_bubbles.empty() ? -1 : int(m_bubbles.stages.size()); }

    int rowCount(const QModelIndex& parent = QModelIndex()) const override;
    int columnCount(const QModelIndex& parent = QModelIndex()) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    // "0-3, 8" from ranks 0, 1, 2, 3, 8.
    static QString rankRanges(std::vector<int> ranks);
    static QString percent(double fraction);

private:
    void recompute();
    QVariant value(int row, int column) const;
    // The schedule's bubble formula with its p, m (and v) filled in.
    QString theoryFormula() const;

    std::optional<Schedule> m_schedule;
    QString m_scheduleWhy;
    std::optional<double> m_theoretical;
    QString m_theoreticalNote;
    int64_t m_step = -1;
    std::vector<SpanEvent> m_spans;
    PipelineBubbles m_bubbles;
    std::vector<std::string> m_problems;
};

} // namespace parallax
