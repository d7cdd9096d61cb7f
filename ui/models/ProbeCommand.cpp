#include "ui/models/ProbeCommand.h"

#include "ui/models/RunLauncher.h"

namespace parallax {

namespace {

// How long a stopped command gets to stop its probe and remove it before the console stops waiting.
constexpr int kStopWaitMs = 30000;

} // namespace

ProbeCommand::ProbeCommand(QObject* parent) : QObject(parent) {}

ProbeCommand::~ProbeCommand() {
    if (!m_process) return;
    m_process->disconnect(this);
    m_process->terminate();
    if (!m_process->waitForFinished(kStopWaitMs)) m_process->kill();
}

QString ProbeCommand::cliPath() const {
    return m_cliPath.isEmpty() ? RunLauncher::defaultCliPath() : m_cliPath;
}

void ProbeCommand::startCommand(const QStringList& arguments, const QList<int>& answers) {
    if (m_process) {
        emit failed(tr("parallax-cli %1 is still running; stop it or wait for it").arg(arguments.value(0)));
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
    process->setArguments(QStringList{QStringLiteral("--store"), m_storePath} + arguments);
    const QString what = QStringLiteral("parallax-cli ") + arguments.value(0);
    const bool merged = m_mergedOutput;
    if (merged) process->setProcessChannelMode(QProcess::MergedChannels);
    const auto readLines = [this, process, merged] {
        m_errBuffer += merged ? process->readAllStandardOutput() : process->readAllStandardError();
        for (int end; (end = m_errBuffer.indexOf('\n')) >= 0;) {
            const QString line = QString::fromUtf8(m_errBuffer.left(end)).trimmed();
            m_errBuffer.remove(0, end + 1);
            if (line.isEmpty()) continue;
            m_errText += line + QChar('\n');
            emit progress(line);
        }
    };
    connect(process, merged ? &QProcess::readyReadStandardOutput : &QProcess::readyReadStandardError, this, readLines);
    connect(process, &QProcess::errorOccurred, this, [this, process](QProcess::ProcessError error) {
        if (error != QProcess::FailedToStart || process != m_process) return;
        m_process = nullptr;
        process->deleteLater();
        emit failed(tr("%1 could not be started: %2").arg(process->program(), process->errorString()));
    });
    connect(process, &QProcess::finished, this, [this, process, answers, what, merged, readLines](int code, QProcess::ExitStatus status) {
        if (process != m_process) return;
        if (merged) readLines();
        m_process = nullptr;
        process->deleteLater();
        const QString output = merged ? m_errText + QString::fromUtf8(m_errBuffer)
                                      : QString::fromUtf8(process->readAllStandardOutput());
        if (status == QProcess::NormalExit && answers.contains(code)) {
            answered(code, output);
            return;
        }
        const QString last = (m_errText + QString::fromUtf8(m_errBuffer)).trimmed().section(QChar('\n'), -1);
        emit failed(status != QProcess::NormalExit ? tr("%1 ended by a signal").arg(what)
                    : code == 3                    ? tr("Stopped; the probe under way was stopped and removed")
                                                   : tr("%1 failed (exit code %2): %3").arg(what).arg(code).arg(last));
    });
    process->start();
}

void ProbeCommand::stop() {
    if (m_process) m_process->terminate();
}

} // namespace parallax
