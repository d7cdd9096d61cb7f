#pragma once

#include <QObject>
#include <QPointer>
#include <QProcess>
#include <QString>
#include <QStringList>

namespace parallax {

// A parallax-cli command that answers with probe runs (fit, advise): started with --csv, its
// progress lines (stderr) reported as they come, its rows (stdout) handed to the subclass at the
// end. Stop, or destroying it (the console closing), sends SIGTERM: the command stops the probe
// under way and removes what the probes left. One command at a time.
class ProbeCommand : public QObject {
    Q_OBJECT
public:
    explicit ProbeCommand(QObject* parent = nullptr);
    ~ProbeCommand() override;

    void setStorePath(const QString& path) { m_storePath = path; }
    QString storePath() const { return m_storePath; }
    // parallax-cli beside this executable unless set.
    void setCliPath(const QString& path) { m_cliPath = path; }
    QString cliPath() const;

    void stop();
    bool isRunning() const { return m_process != nullptr; }

signals:
    void progress(const QString& line);
    void failed(const QString& message);

protected:
    // `arguments` after --store STORE. `answers` are the exit codes whose output is an answer (0,
    // and e.g. fit's 1: not even micro-batch 1 fits).
    void startCommand(const QStringList& arguments, const QList<int>& answers);
    // The command ended with an answer: its standard output.
    virtual void answered(int exitCode, const QString& output) = 0;
    // For a command that reports its progress on standard output (cache): both streams are read as
    // progress lines, and the answer is all of them.
    void setMergedOutput(bool merged) { m_mergedOutput = merged; }

private:
    QString m_storePath;
    QString m_cliPath;
    QPointer<QProcess> m_process;
    QByteArray m_errBuffer;
    QString m_errText;
    bool m_mergedOutput = false;
};

} // namespace parallax
