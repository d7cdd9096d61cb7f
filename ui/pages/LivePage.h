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
class QLayout;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTabWidget;
class QTableView;
class QVBoxLayout;

class QPainter;
class QColor;

namespace parallax {

class CurvePlot;
class DeviceGridModel;
class DeviceHistoryLoader;
class HeatMapPlot;
class RunLauncher;
class RunListModel;
class SamplesPanel;
class StoreWatcher;

// One run while it trains (or after): state, step/total with progress and ETA, tokens/s and MFU;
// curves of loss (raw and smoothed), learning rate, grad norm and throughput; the device grid (a
// row per host, a host the supervisor finds silent or lost outlined in red and named in a banner)
// and a rank x step heat map, both coloured by what each rank does (computing or waiting in
// collectives), opened at the run's last window with Earlier to read the ones before it, with the images a run draws ([samples]) in a Samples tab beside them (SamplesPanel);
// the supervisor's alerts (a hang, a straggler) in a banner, their rank marked in the
// grid; a straggler warning naming the slow rank; Stop and Resume, which ask `parallax-cli`
// (beside the console's executable) to act through RunLauncher, so that the run's supervisor stays
// the only writer of its rows. A picker lists the store's runs (RunListModel); until a person picks
// one the page follows the newest running run, so that a run started from a terminal is shown as it
// starts. A resumed run names the run it continues, with a button to open it. What the labels say
// is decided by LiveSummary; the page assigns it.
class LivePage : public QWidget {
    Q_OBJECT
public:
    // Its icon in the navigation (a pulse), on PageIcons' 24 x 24 grid with the pen set.
    static void paintIcon(QPainter& p, const QColor& color);
    explicit LivePage(StoreWatcher* watcher, QWidget* parent = nullptr);
    ~LivePage() override;

    // 0: none. Watches the run through the watcher while shown. A run set here is the person's
    // choice: the page stops following new runs.
    void setRun(qint64 run);
    qint64 run() const { return m_run; }

    // The runs the picker offers and following watches (newest first).
    void setRunList(RunListModel* runs);
    // Whether the page switches to a run that starts (on by default; off once a run is picked).
    void setFollowNewRuns(bool follow);
    bool followsNewRuns() const;
    // The picker's entries as shown, newest first.
    QStringList pickerTexts() const;
    // Picks the run as a person does in the picker.
    void pickRun(qint64 run);

    const RunSnapshot& snapshot() const { return m_snapshot; }
    DeviceGridModel* deviceModel() const { return m_devices; }
    HeatMapPlot* heatMap() const { return m_heatMap; }
    // The images the run drew, in a tab beside the devices while it has any or its spec asks for them.
    SamplesPanel* samplesPanel() const { return m_samples; }
    QTabWidget* bottomTabs() const { return m_bottomTabs; }

    // Default: parallax-cli in QCoreApplication::applicationDirPath().
    void setCliProgram(const QString& program);
    QString cliProgram() const;
    void setStragglerThreshold(double fraction);

    // Shown texts, for tests and screenshots.
    QString stateText() const;
    QString progressText() const; // as the page shows it: "step 100 / 200", "starting 4 ranks…"
    QString stragglerText() const; // empty when no straggler
    QString hostAlarmText() const;  // empty when every host answers
    QString failureText() const;    // why a failed or lost run ended; empty otherwise
    QString alertText() const;      // the supervisor's active alerts; empty when none
    QString resumedText() const;    // "Resumed from #3 (name) at step 40"; empty for a fresh run
    bool stopEnabled() const;
    bool resumeEnabled() const;

public slots:
    void stopRun();
    void resumeRun();

signals:
    // A parallax-cli command ended; `arguments` are those after `--store <the watched store>`,
    // `output` is what it printed (on failure, RunLauncher's message: the command, its exit code
    // and what it printed, or why it could not start).
    void commandFinished(const QStringList& arguments, bool ok, const QString& output);
    // The straggler banner was clicked: show that rank's log.
    void showRankLogs(qint64 run, int rank);
    // "Fix and relaunch" of a run that ended badly: edit its spec in the New run form.
    void fixAndRelaunch(qint64 run);
    // "Resume with changes": continue this run from its checkpoint with its spec edited in the New
    // run form (another layout, hosts or devices).
    void resumeWithChanges(qint64 run);
    // Resume started a new run continuing this one.
    void runStarted(qint64 run);
    // "Open" beside "Resumed from #N": show the run this one continues.
    void openRun(qint64 run);
    // The page followed a run that started (not picked by a person); `message` says so.
    void runFollowed(qint64 run, const QString& message);

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    void buildUi();
    QLayout* buildRunBar();
    QLayout* buildHeader();
    void buildBanners(QVBoxLayout* root);
    QWidget* buildFailureBox();
    QLayout* buildCurveControls();
    QWidget* buildPlots(QWidget* parent);
    QWidget* buildBottomTabs(QWidget* parent);
    QWidget* buildDevices(QWidget* parent);
    QWidget* buildHeatMap(QWidget* parent);
    void onRunChanged(const RunRecord& record);
    void onRunStart(qint64 run, const RunStartEvent& start);
    void onMetrics(qint64 run, const std::vector<StepEvent>& rows, bool reset);
    void onDevices(qint64 run, const std::vector<DeviceEvent>& rows, bool reset);
    void onHostStatuses(qint64 run, const std::vector<HostStatus>& statuses);
    void onRankSteps(qint64 run, const std::vector<RankStepEvent>& rows, bool reset);
    void onAlerts(qint64 run, const std::vector<RunAlert>& alerts);
    void onSlurmJob(qint64 run, const SlurmJob& job);
    void refreshSlurmJob();
    void showRun(qint64 run);
    void refreshPicker();
    void followNewestRun();
    void scheduleRefresh();
    void refreshLabels();
    // A Stop or Resume asked of parallax-cli (`arguments` after --store) and its end.
    void beginCommand(const QStringList& arguments);
    void endCommand(bool ok, const QString& output);
    void setAxis(int index);
    void setLossSmoothing();

    QPointer<StoreWatcher> m_watcher;
    qint64 m_run = 0;
    bool m_sawRunning = false; // the run shown was running while shown: its continuation is followed
    RunSnapshot m_snapshot;
    RunLauncher* m_launcher = nullptr;
    QStringList m_command; // the Stop or Resume under way, after --store
    QTimer m_refreshTimer;
    QTimer m_clock; // refreshes the labels once a second

    QLabel* m_title = nullptr;
    QLabel* m_state = nullptr;
    QProgressBar* m_progress = nullptr;
    QLabel* m_eta = nullptr;
    QLabel* m_slurm = nullptr; // a run on Slurm: its job, state, reason, place in the queue, time left
    std::optional<SlurmJob> m_slurmJob;
    QLabel* m_rate = nullptr;
    QLabel* m_mfu = nullptr;
    QLabel* m_straggler = nullptr;
    QLabel* m_lossWarning = nullptr;
    QLabel* m_recovered = nullptr; // a hang that cleared
    QString m_progressText;         // LiveSummary::progress as last shown
    QLabel* m_hostAlarm = nullptr;
    QLabel* m_alert = nullptr;
    QComboBox* m_picker = nullptr;
    QCheckBox* m_follow = nullptr;
    QLabel* m_resumed = nullptr;
    QPushButton* m_openParent = nullptr;
    QPointer<RunListModel> m_runs;
    QWidget* m_failureBox = nullptr;
    QLabel* m_failure = nullptr;
    QPushButton* m_fix = nullptr;
    QLabel* m_commandStatus = nullptr;
    QPushButton* m_stop = nullptr;
    QPushButton* m_resume = nullptr;
    QPushButton* m_resumeChanged = nullptr;
    QString m_resumeTip, m_resumeChangedTip; // what they do, shown while no continuation refuses them
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
    DeviceHistoryLoader* m_history = nullptr; // the windows before the one the run opened at
    QPushButton* m_earlier = nullptr;         // asks m_history for the next one
    QTabWidget* m_bottomTabs = nullptr;
    SamplesPanel* m_samples = nullptr;
    std::optional<RunSnapshot::Straggler> m_shownStraggler;
};

} // namespace parallax
