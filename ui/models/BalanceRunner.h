#pragma once

#include "ui/models/ProbeCommand.h"

#include <QString>
#include <QStringList>
#include <QVector>

namespace parallax {

// The New run form's "Balance the stages": `parallax-cli --store S balance SPEC --print-only --csv`
// (a probe run of the spec on its own target whose ranks time every unit, docs/guide.md): the split
// by the spec's own rule (its stage_layers, or by FLOPs) against the split by measured time, each
// stage's time under both. Stopped as every ProbeCommand.
class BalanceRunner : public ProbeCommand {
    Q_OBJECT
public:
    struct Stage {
        qint64 blocksBefore = 0;
        double msBefore = 0; // forward + backward of one micro-batch on the split it had
        qint64 blocks = 0;
        double ms = 0;       // on the balanced split
    };
    struct Result {
        QVector<Stage> stages;
        QVector<qint64> layersBefore() const;
        QVector<qint64> layers() const;
        double slowestBefore() const;
        double slowest() const;
    };

    explicit BalanceRunner(QObject* parent = nullptr) : ProbeCommand(parent) {}

    // After --store STORE.
    static QStringList arguments(const QString& specPath);
    // The rows of `balance --csv`, in stage order; other lines are skipped.
    static Result parse(const QString& output);

    void start(const QString& specPath);

signals:
    void finished(const parallax::BalanceRunner::Result& result);

protected:
    void answered(int exitCode, const QString& output) override;
};

} // namespace parallax
