#pragma once

#include "ui/models/ProbeCommand.h"

#include <QString>
#include <QStringList>
#include <QVector>

namespace parallax {

// The New run form's "Find the largest micro-batch": runs `parallax-cli --store S fit SPEC --csv`
// (probe runs on the spec's own target, docs/guide.md): its progress line by line, its answer at
// the end; stopped as every ProbeCommand.
class FitRunner : public ProbeCommand {
    Q_OBJECT
public:
    struct Probe {
        bool checkpointing = false;
        qint64 microBatch = 0;
        bool ran = false;
        double peakBytes = 0;
        double estimateBytes = 0;
        bool fits = false;
    };
    struct Result {
        QVector<Probe> probes;
        qint64 largest = 0;                 // without activation checkpointing; 0: none fits
        qint64 largestWithCheckpointing = 0; // with it
        const Probe* probe(bool checkpointing, qint64 microBatch) const;
    };
    struct Options {
        double memoryLimitBytes = 0; // 0: fit's default (this machine's memory per rank, on CPU)
        qint64 maxMicroBatch = 0;    // 0: fit's default
        QString checkpointing = QStringLiteral("both");
    };

    explicit FitRunner(QObject* parent = nullptr) : ProbeCommand(parent) {}

    // After --store STORE.
    static QStringList arguments(const QString& specPath, const Options& options);
    // The rows of `fit --csv`; other lines (progress on stderr) are skipped.
    static Result parse(const QString& output);

    void start(const QString& specPath, const Options& options);

signals:
    void finished(const parallax::FitRunner::Result& result);

protected:
    void answered(int exitCode, const QString& output) override;
};

} // namespace parallax
