#include "ui/models/FitRunner.h"

namespace parallax {

const FitRunner::Probe* FitRunner::Result::probe(bool checkpointing, qint64 microBatch) const {
    for (const Probe& p : probes)
        if (p.checkpointing == checkpointing && p.microBatch == microBatch) return &p;
    return nullptr;
}

QStringList FitRunner::arguments(const QString& specPath, const Options& o) {
    QStringList args{QStringLiteral("fit"), specPath, QStringLiteral("--csv"),
                     QStringLiteral("--activation-checkpointing"), o.checkpointing};
    if (o.memoryLimitBytes > 0)
        args << QStringLiteral("--memory-limit") << QString::number(static_cast<qint64>(o.memoryLimitBytes));
    if (o.maxMicroBatch > 0) args << QStringLiteral("--max-micro-batch") << QString::number(o.maxMicroBatch);
    return args;
}

FitRunner::Result FitRunner::parse(const QString& output) {
    Result r;
    for (const QString& line : output.split(QChar('\n'))) {
        const QStringList f = line.trimmed().split(QChar(','));
        // Seven columns, or eight with timed_out (a probe that timed out neither fits nor does not;
        // fit then exits 4 and says so).
        if (f.size() < 7 || f.size() > 8 || (f[0] != QLatin1String("0") && f[0] != QLatin1String("1"))) continue;
        Probe p;
        bool ok = false;
        p.checkpointing = f[0] == QLatin1String("1");
        p.microBatch = f[1].toLongLong(&ok);
        if (!ok) continue;
        p.ran = f[2] == QLatin1String("1");
        p.peakBytes = f[3].toDouble();
        p.estimateBytes = f[4].toDouble();
        p.fits = f[5] == QLatin1String("1");
        if (f[6] == QLatin1String("1")) (p.checkpointing ? r.largestWithCheckpointing : r.largest) = p.microBatch;
        r.probes.push_back(p);
    }
    return r;
}

void FitRunner::start(const QString& specPath, const Options& options) {
    // Exit 1 is an answer too: not even micro-batch 1 fits (fit says what to change).
    startCommand(arguments(specPath, options), {0, 1});
}

void FitRunner::answered(int exitCode, const QString& output) {
    const Result result = parse(output);
    if (exitCode != 0 && result.probes.isEmpty()) {
        emit failed(tr("parallax-cli fit probed nothing (exit code %1)").arg(exitCode));
        return;
    }
    emit finished(result);
}

} // namespace parallax
