#pragma once

#include <QObject>
#include <QPointer>
#include <QProcess>
#include <QString>
#include <QStringList>
#include <QVector>

namespace parallax {

// The New run form's "Find the largest micro-batch": runs `parallax-cli --store S fit SPEC --csv`
// (probe runs on the spec's own target, docs/guide.md) and reports its progress line by line and
// its answer. Stop, or destroying the runner (the console closing), sends SIGTERM: fit stops the
// probe under way and removes what the probes left. One fit at a time.
class FitRunner : public QObject {
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

    explicit FitRunner(QObject* parent = nullptr);
    ~FitRunner() override;

    void setStorePath(const QString& path) { m_storePath = path; }
    // parallax-cli beside this executable unless set.
    void setCliPath(const QString& path) { m_cliPath = path; }
    QString cliPath() const;

    QStringList arguments(const QString& specPath, const Options& options) const;
    // The rows of `fit --csv`; other lines (progress on stderr) are skipped.
    static Result parse(const QString& output);

    void start(const QString& specPath, const Options& options);
    void stop();
    bool isRunning() const { return m_process != nullptr; }

signals:
    void progress(const QString& line);
    void finished(const parallax::FitRunner::Result& result);
    void failed(const QString& message);

private:
    QString m_storePath;
    QString m_cliPath;
    QPointer<QProcess> m_process;
    QByteArray m_errBuffer;
    QString m_errText;
};

} // namespace parallax
