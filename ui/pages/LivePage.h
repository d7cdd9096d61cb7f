#pragma once

#include "ui/models/RunSnapshot.h"

#include <QPointer>
#include <QString>
#include <QStringList>
#include <QTimer>
#include <QWidget>

class QCheckBox;
class QComboBox;
class QLabel;
class QProcess;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTableView;

namespace parallax {

class CurvePlot;
class DeviceGridModel;
class HeatMapPlot;
class StoreWatcher;

// One run while it trains (or after): state, step/total with progress and ETA, tokens/s and MFU;
// curves of loss (raw and smoothed), learning rate, grad norm and throughput; the device grid (a
// row per host, a host the supervisor finds silent or lost outlined in red and named in a banner)
// and a utilization heat map; a straggler warning naming the slow rank; Stop and Resume, which ask
// `parallax-cli` (beside the console's executable) to act, so that the run's supervisor stays
// the only writer of its rows.
class LivePage : public QWidget {
    Q_OBJECT
public:
    explicit LivePage(StoreWatcher* watcher, QWidget* parent = nullptr);
    ~LivePage() override;

    // 0: none. Watches the run through the watcher while shown.
    void setRun(qint64 run);
    qint64 run() const { return m_run; }

    const RunSnapshot& snapshot() const { return m_snapshot; }
    DeviceGridModel* deviceModel() const { return m_devices; }

    // Default: parallax-cli in QCoreApplication::applicationDirPath().
    void setCliProgram(const QString& program);
    QString cliProgram() const { return m_cli; }
    void setStragglerThreshold(double fraction);

    // Shown texts, for tests and screenshots.
    QString stateText() const;
    QString progressText() const;
    QString stragglerText() const; // empty when no straggler
    QString hostAlarmText() const;  // empty when every host answers
    QString failureText() const;    // why a failed or lost run ended; empty otherwise
    bool stopEnabled() const;
    bool resumeEnabled() const;

public slots:
    void stopRun();
    void resumeRun();

signals:
    // A parallax-cli command ended; `arguments` are those after `--store <the watched store>`,
    // `output` is what it printed (its error on failure).
    void commandFinished(const QStringList& arguments, bool ok, const QString& output);
    // The straggler banner was clicked: show that rank's log.
    void showRankLogs(qint64 run, int rank);
    // "Fix and relaunch" of a run that ended badly: edit its spec in the New run form.
    void fixAndRelaunch(qint64 run);
    // Resume started a new run continuing this one.
    void runStarted(qint64 run);

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    void buildUi();
    void onRunChanged(const RunRecord& record);
    void onRunStart(qint64 run, const RunStartEvent& start);
    void onMetrics(qint64 run, const std::vector<StepEvent>& rows, bool reset);
    void onDevices(qint64 run, const std::vector<DeviceEvent>& rows, bool reset);
    void onHostStatuses(qint64 run, const std::vector<HostStatus>& statuses);
    void scheduleRefresh();
    void refreshLabels();
    void runCli(const QStringList& arguments);
    void setAxis(int index);
    void setLossSmoothing();

    QPointer<StoreWatcher> m_watcher;
    qint64 m_run = 0;
    RunSnapshot m_snapshot;
    QString m_cli;
    QPointer<QProcess> m_process;
    QTimer m_refreshTimer;

    QLabel* m_title = nullptr;
    QLabel* m_state = nullptr;
    QProgressBar* m_progress = nullptr;
    QLabel* m_eta = nullptr;
    QLabel* m_rate = nullptr;
    QLabel* m_mfu = nullptr;
    QLabel* m_straggler = nullptr;
    QLabel* m_lossWarning = nullptr;
    QLabel* m_hostAlarm = nullptr;
    QWidget* m_failureBox = nullptr;
    QLabel* m_failure = nullptr;
    QPushButton* m_fix = nullptr;
    QLabel* m_commandStatus = nullptr;
    QPushButton* m_stop = nullptr;
    QPushButton* m_resume = nullptr;
    QComboBox* m_axis = nullptr;
    QCheckBox* m_logLoss = nullptr;
    QSpinBox* m_smoothing = nullptr;
    CurvePlot* m_lossPlot = nullptr;
    CurvePlot* m_lrPlot = nullptr;
    CurvePlot* m_gradPlot = nullptr;
    CurvePlot* m_throughputPlot = nullptr;
    DeviceGridModel* m_devices = nullptr;
    QTableView* m_deviceView = nullptr;
    HeatMapPlot* m_heatMap = nullptr;
    std::optional<RunSnapshot::Straggler> m_shownStraggler;
};

} // namespace parallax
