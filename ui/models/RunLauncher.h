#pragma once

#include <QObject>
#include <QPointer>
#include <QProcess>
#include <QString>
#include <QStringList>
#include <QTimer>

#include <optional>

namespace parallax {

// Starts runs the way a terminal would: `parallax-cli --store <store> run <spec> --detach` (or
// `resume <id> --detach`) from an argument vector. parallax-cli hands the run to a supervisor of
// its own session and exits after printing the run's id, so the console never owns a run: closing
// it stops nothing. It also asks a run to stop (`stop <id>`). One command at a time. Without a
// store path, parallax-cli's default store is meant (no --store).
class RunLauncher : public QObject {
    Q_OBJECT
public:
    static constexpr int kTimeoutMs = 60000;

    explicit RunLauncher(QObject* parent = nullptr);
    ~RunLauncher() override;

    void setStorePath(const QString& path) { m_storePath = path; }
    QString storePath() const { return m_storePath; }
    // parallax-cli beside this executable unless set.
    void setCliPath(const QString& path) { m_cliPath = path; }
    QString cliPath() const;
    static QString defaultCliPath();
    // Why `program` cannot be run as parallax-cli ("" when it can): what to build, and where.
    static QString missingCliProblem(const QString& program);

    QStringList launchArguments(const QString& specPath) const;
    QStringList resumeArguments(qint64 runId) const;
    QStringList attachArguments(qint64 runId) const;
    QStringList continueArguments(const QString& specPath, qint64 runId) const;
    QStringList stopArguments(qint64 runId) const;

    void launch(const QString& specPath);
    void resume(qint64 runId);
    // `run <spec> --from <id> --detach`: a new run continuing run `runId` from its checkpoint with
    // the spec at `specPath` (another layout, hosts or devices; the same model).
    void continueFrom(const QString& specPath, qint64 runId);
    // A run in a Slurm batch job whose supervisor is gone: `attach <id> --detach` follows it again.
    void attach(qint64 runId);
    // `stop <id>`: asks the run's supervisor to checkpoint and stop the ranks; stopAsked() when
    // parallax-cli has asked.
    void stop(qint64 runId);
    bool isBusy() const { return m_process != nullptr; }
    // What the last command that succeeded printed (its standard output and error for stop).
    QString lastOutput() const { return m_lastOutput; }

    // The run id in parallax-cli's output: a line that is only a number, or "run 12" / "run #12" /
    // "id 12" / "id=12".
    static std::optional<qint64> parseRunId(const QString& output);

signals:
    void started(qint64 runId);
    void stopAsked(qint64 runId);
    void failed(const QString& message);

private:
    // What a command answers with: the id of the run it started, or that it asked a run to stop.
    enum class Answer { RunId, Stopped };
    QStringList withStore(const QStringList& arguments) const;
    void start(const QStringList& arguments, const QString& what, Answer answer = Answer::RunId, qint64 runId = 0);
    void onFinished(QProcess* process, int code, QProcess::ExitStatus status);
    void finish(const QString& error);

    QString m_storePath;
    QString m_cliPath;
    QPointer<QProcess> m_process;
    QString m_what;
    Answer m_answer = Answer::RunId;
    qint64 m_stopRun = 0; // the run a stop command is about
    QString m_lastOutput;
    QTimer m_timeout;
};

} // namespace parallax
