#include "ui/models/RunLauncher.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QRegularExpression>

namespace parallax {

RunLauncher::RunLauncher(QObject* parent) : QObject(parent) {
    m_timeout.setSingleShot(true);
    m_timeout.setInterval(kTimeoutMs);
    connect(&m_timeout, &QTimer::timeout, this, [this] {
        if (!m_process) return;
        m_process->kill();
        finish(tr("%1 did not finish within %2 s; it was stopped. Check that the store %3 is reachable.")
                   .arg(m_what)
                   .arg(kTimeoutMs / 1000)
                   .arg(m_storePath));
    });
}

RunLauncher::~RunLauncher() {
    // A QProcess kills its process when destroyed: let parallax-cli finish handing the run to its
    // supervisor (it exits as soon as the run exists), so that closing the console loses no run.
    if (m_process) {
        m_process->disconnect(this);
        m_process->waitForFinished(kTimeoutMs);
    }
}

QString RunLauncher::defaultCliPath() {
    return QDir(QCoreApplication::applicationDirPath()).filePath(QStringLiteral("parallax-cli"));
}

QString RunLauncher::missingCliProblem(const QString& program) {
    if (QFileInfo(program).isExecutable()) return {};
    return tr("%1 is missing or not executable; build it (cmake --build <build> --target parallax-cli), "
              "it belongs beside the console")
        .arg(program);
}

QString RunLauncher::cliPath() const {
    return m_cliPath.isEmpty() ? defaultCliPath() : m_cliPath;
}

QStringList RunLauncher::withStore(const QStringList& arguments) const {
    return m_storePath.isEmpty() ? arguments : QStringList{QStringLiteral("--store"), m_storePath} + arguments;
}

QStringList RunLauncher::launchArguments(const QString& specPath) const {
    return withStore({QStringLiteral("run"), specPath, QStringLiteral("--detach")});
}

QStringList RunLauncher::resumeArguments(qint64 runId) const {
    return withStore({QStringLiteral("resume"), QString::number(runId), QStringLiteral("--detach")});
}

QStringList RunLauncher::attachArguments(qint64 runId) const {
    return withStore({QStringLiteral("attach"), QString::number(runId), QStringLiteral("--detach")});
}

QStringList RunLauncher::stopArguments(qint64 runId) const {
    return withStore({QStringLiteral("stop"), QString::number(runId)});
}

void RunLauncher::stop(qint64 runId) {
    start(stopArguments(runId), tr("parallax-cli stop %1").arg(runId), Answer::Stopped, runId);
}

void RunLauncher::attach(qint64 runId) {
    start(attachArguments(runId), tr("parallax-cli attach %1").arg(runId));
}

void RunLauncher::launch(const QString& specPath) {
    start(launchArguments(specPath), tr("parallax-cli run %1").arg(QFileInfo(specPath).fileName()));
}

QStringList RunLauncher::continueArguments(const QString& specPath, qint64 runId) const {
    return withStore({QStringLiteral("run"), specPath, QStringLiteral("--from"), QString::number(runId),
                      QStringLiteral("--detach")});
}

void RunLauncher::continueFrom(const QString& specPath, qint64 runId) {
    start(continueArguments(specPath, runId),
          tr("parallax-cli run %1 --from %2").arg(QFileInfo(specPath).fileName()).arg(runId));
}

void RunLauncher::resume(qint64 runId) {
    start(resumeArguments(runId), tr("parallax-cli resume %1").arg(runId));
}

std::optional<qint64> RunLauncher::parseRunId(const QString& output) {
    static const QRegularExpression bare(QStringLiteral("^\\s*(\\d+)\\s*$"), QRegularExpression::MultilineOption);
    static const QRegularExpression named(QStringLiteral("\\b(?:run|id)\\s*(?:#|=|:)?\\s*(\\d+)\\b"),
                                          QRegularExpression::CaseInsensitiveOption);
    for (const QRegularExpression* re : {&bare, &named}) {
        const QRegularExpressionMatch m = re->match(output);
        if (m.hasMatch()) return m.captured(1).toLongLong();
    }
    return std::nullopt;
}

void RunLauncher::start(const QStringList& arguments, const QString& what, Answer answer, qint64 runId) {
    if (m_process) {
        emit failed(tr("%1 is still starting; wait for it before starting another").arg(m_what));
        return;
    }
    const QString program = cliPath();
    if (const QString problem = missingCliProblem(program); !problem.isEmpty()) {
        emit failed(problem);
        return;
    }
    m_what = what;
    m_answer = answer;
    m_stopRun = runId;
    auto* process = new QProcess(this);
    m_process = process;
    process->setProgram(program);
    process->setArguments(arguments);
    // A stop's whole output is its answer; a launch's run id is on its standard output.
    process->setProcessChannelMode(answer == Answer::Stopped ? QProcess::MergedChannels : QProcess::SeparateChannels);
    connect(process, &QProcess::errorOccurred, this, [this, process](QProcess::ProcessError error) {
        if (error != QProcess::FailedToStart || process != m_process) return;
        finish(tr("%1 could not be started: %2").arg(process->program(), process->errorString()));
    });
    connect(process, &QProcess::finished, this, [this, process](int code, QProcess::ExitStatus status) {
        if (process == m_process) onFinished(process, code, status);
    });
    m_timeout.start();
    process->start();
}

void RunLauncher::onFinished(QProcess* process, int code, QProcess::ExitStatus status) {
    const QString out = QString::fromUtf8(process->readAllStandardOutput());
    // A stop's error output is merged into its standard output.
    const QString err = m_answer == Answer::Stopped ? QString() : QString::fromUtf8(process->readAllStandardError()).trimmed();
    if (status != QProcess::NormalExit || code != 0) {
        const QString said = m_answer == Answer::Stopped ? out.trimmed() : err;
        finish(tr("%1 failed (exit code %2)%3").arg(m_what).arg(code).arg(said.isEmpty() ? QString() : QStringLiteral(":\n") + said));
        return;
    }
    const std::optional<qint64> id = m_answer == Answer::RunId ? parseRunId(out) : std::optional<qint64>(m_stopRun);
    if (!id) {
        finish(tr("%1 printed no run id; its output was:\n%2").arg(m_what, (out + QChar('\n') + err).trimmed()));
        return;
    }
    m_timeout.stop();
    m_process = nullptr;
    process->deleteLater();
    m_lastOutput = (out + (err.isEmpty() ? QString() : QChar('\n') + err)).trimmed();
    if (m_answer == Answer::Stopped) emit stopAsked(*id);
    else emit started(*id);
}

void RunLauncher::finish(const QString& error) {
    m_timeout.stop();
    if (m_process) {
        m_process->disconnect(this);
        m_process->deleteLater();
        m_process = nullptr;
    }
    emit failed(error);
}

} // namespace parallax
