#include "ui/models/FitRunner.h"

#include "ui/models/RunLauncher.h"


namespace parallax {

namespace {

// How long a stopped fit gets to stop its probe and remove it before the console stops waiting.
constexpr int kStopWaitMs = 30000;

} // namespace

const FitRunner::Probe* FitRunner::Result::probe(bool checkpointing, qint64 microBatch) const {
    for (const Probe& p : probes)
        if (p.checkpointing == checkpointing && p.microBatch == microBatch) return &p;
    return nullptr;
}

FitRunner::FitRunner(QObject* parent) : QObject(parent) {}

FitRunner::~FitRunner() {
    if (!m_process) return;
    m_process->disconnect(this);
    m_process->terminate();
    if (!m_process->waitForFinished(kStopWaitMs)) m_process->kill();
}

QString FitRunner::cliPath() const {
    return m_cliPath.isEmpty() ? RunLauncher::defaultCliPath() : m_cliPath;
}

QStringList FitRunner::arguments(const QString& specPath, const Options& o) const {
    QStringList args{QStringLiteral("--store"), m_storePath, QStringLiteral("fit"), specPath, QStringLiteral("--csv"),
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
        if (f.size() != 7 || (f[0] != QLatin1String("0") && f[0] != QLatin1String("1"))) continue;
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
    if (m_process) {
        emit failed(tr("a fit is still running; stop it or wait for it"));
        return;
    }
    const QString program = cliPath();
    if (const QString problem = RunLauncher::missingCliProblem(program); !problem.isEmpty()) {
        emit failed(problem);
        return;
    }
    auto* process = new QProcess(this);
    m_process = process;
    m_errBuffer.clear();
    m_errText.clear();
    process->setProgram(program);
    process->setArguments(arguments(specPath, options));
    connect(process, &QProcess::readyReadStandardError, this, [this, process] {
        m_errBuffer += process->readAllStandardError();
        for (int end; (end = m_errBuffer.indexOf('\n')) >= 0;) {
            const QString line = QString::fromUtf8(m_errBuffer.left(end)).trimmed();
            m_errBuffer.remove(0, end + 1);
            if (line.isEmpty()) continue;
            m_errText += line + QChar('\n');
            emit progress(line);
        }
    });
    connect(process, &QProcess::errorOccurred, this, [this, process](QProcess::ProcessError error) {
        if (error != QProcess::FailedToStart || process != m_process) return;
        m_process = nullptr;
        process->deleteLater();
        emit failed(tr("%1 could not be started: %2").arg(process->program(), process->errorString()));
    });
    connect(process, &QProcess::finished, this, [this, process](int code, QProcess::ExitStatus status) {
        if (process != m_process) return;
        m_process = nullptr;
        process->deleteLater();
        const Result result = parse(QString::fromUtf8(process->readAllStandardOutput()));
        const QString err = (m_errText + QString::fromUtf8(m_errBuffer)).trimmed();
        // Exit 1 is an answer too: not even micro-batch 1 fits (fit says what to change).
        if (status == QProcess::NormalExit && (code == 0 || (code == 1 && !result.probes.isEmpty()))) {
            emit finished(result);
            return;
        }
        const QString last = err.section(QChar('\n'), -1);
        emit failed(status != QProcess::NormalExit ? tr("parallax-cli fit ended by a signal")
                    : code == 3                    ? tr("Stopped; the probe under way was stopped and removed")
                                                   : tr("parallax-cli fit failed (exit code %1): %2").arg(code).arg(last));
    });
    process->start();
}

void FitRunner::stop() {
    if (m_process) m_process->terminate();
}

} // namespace parallax
