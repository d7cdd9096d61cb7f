#pragma once

#include "core/spec/RunSpec.h"
#include "ui/models/ProbeCommand.h"

#include <QAbstractTableModel>
#include <QVector>

#include <optional>

namespace parallax {

// One layout as `parallax-cli advise --csv` reports it.
struct LayoutAdviceRow {
    QString label;          // "dp2 tp1 pp2 zero1"
    QString excluded;       // why it cannot run; empty when it can
    double memoryBytes = 0;
    double predictedMs = 0;
    double tokensPerS = 0;  // measured; 0 when not tried
    double measuredMs = 0;
    int rank = 0;           // by measured tokens/s, 1 the fastest; 0 when not tried
};

// The New run form's "Try the top 3 layouts": `parallax-cli advise SPEC --csv --try 3` on the spec's
// devices; stopped as every ProbeCommand.
class AdviseRunner : public ProbeCommand {
    Q_OBJECT
public:
    explicit AdviseRunner(QObject* parent = nullptr) : ProbeCommand(parent) {}
    static QStringList arguments(const QString& specPath, qint64 devices, int tries, double memoryLimitBytes);
    static QVector<LayoutAdviceRow> parse(const QString& output);
    void start(const QString& specPath, qint64 devices, int tries, double memoryLimitBytes);

signals:
    void finished(const QVector<parallax::LayoutAdviceRow>& rows);

protected:
    void answered(int exitCode, const QString& output) override;
};

// The advisor's layouts as a table: those tried first by their measured rank, then the others that
// can run by their predicted step, then those that cannot with why.
class LayoutAdviceModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { Layout, Memory, Predicted, Measured, MeasuredStep, Verdict, ColumnCount };
    explicit LayoutAdviceModel(QObject* parent = nullptr) : QAbstractTableModel(parent) {}

    void setRows(QVector<LayoutAdviceRow> rows);
    const QVector<LayoutAdviceRow>& rows() const { return m_rows; }
    // The fastest layout measured, if any was.
    std::optional<LayoutAdviceRow> best() const;

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    QVector<LayoutAdviceRow> m_rows;
};

// The parallel layout a label names ("dp2 tp1 pp2 zero1") set on `spec`; false when it names none.
bool applyLayoutLabel(const QString& label, RunSpec& spec);

} // namespace parallax
