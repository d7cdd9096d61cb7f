#include "ui/models/BalanceRunner.h"

#include <algorithm>

namespace parallax {

QVector<qint64> BalanceRunner::Result::layersBefore() const {
    QVector<qint64> out;
    for (const Stage& s : stages) out.push_back(s.blocksBefore);
    return out;
}

QVector<qint64> BalanceRunner::Result::layers() const {
    QVector<qint64> out;
    for (const Stage& s : stages) out.push_back(s.blocks);
    return out;
}

double BalanceRunner::Result::slowestBefore() const {
    double most = 0;
    for (const Stage& s : stages) most = std::max(most, s.msBefore);
    return most;
}

double BalanceRunner::Result::slowest() const {
    double most = 0;
    for (const Stage& s : stages) most = std::max(most, s.ms);
    return most;
}

QStringList BalanceRunner::arguments(const QString& specPath) {
    return {QStringLiteral("balance"), specPath, QStringLiteral("--print-only"), QStringLiteral("--csv")};
}

BalanceRunner::Result BalanceRunner::parse(const QString& output) {
    // stage,blocks_before,ms_before,blocks,ms
    Result r;
    for (const QString& line : output.split(QChar('\n'))) {
        const QStringList f = line.trimmed().split(QChar(','));
        if (f.size() != 5) continue;
        bool ok[5] = {};
        const qint64 stage = f[0].toLongLong(&ok[0]);
        Stage s;
        s.blocksBefore = f[1].toLongLong(&ok[1]);
        s.msBefore = f[2].toDouble(&ok[2]);
        s.blocks = f[3].toLongLong(&ok[3]);
        s.ms = f[4].toDouble(&ok[4]);
        // The header and anything out of order are not a stage.
        if (!std::all_of(std::begin(ok), std::end(ok), [](bool b) { return b; }) || stage != r.stages.size()) continue;
        r.stages.push_back(s);
    }
    return r;
}

void BalanceRunner::start(const QString& specPath) { startCommand(arguments(specPath), {0}); }

void BalanceRunner::answered(int exitCode, const QString& output) {
    const Result result = parse(output);
    if (result.stages.size() < 2) {
        emit failed(tr("parallax-cli balance answered no split (exit code %1)").arg(exitCode));
        return;
    }
    emit finished(result);
}

} // namespace parallax
