#include "ui/pages/LivePage.h"
#include "ui/widgets/TableExport.h"

#include "ui/models/DeviceGridModel.h"
#include "ui/models/DeviceHistoryLoader.h"
#include "ui/models/LiveSummary.h"
#include "ui/models/RunLauncher.h"
#include "ui/models/ResumeCheck.h"
#include "ui/models/RunListModel.h"
#include "ui/models/StoreWatcher.h"
#include "ui/pages/SamplesPanel.h"
#include "ui/plots/CurvePlot.h"
#include "ui/plots/HeatMapPlot.h"
#include "ui/models/RunColors.h"
#include "ui/widgets/HostAlarmDelegate.h"

#include <QPainter>
#include <QPainterPath>
#include <QCheckBox>
#include <QComboBox>
#include <QDateTime>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMouseEvent>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QSplitter>
#include <QTabWidget>
#include <QTableView>
#include <QVBoxLayout>

#include <algorithm>

namespace parallax {

LivePage::LivePage(StoreWatcher* watcher, QWidget* parent)
    : QWidget(parent), m_watcher(watcher), m_launcher(new RunLauncher(this)) {
    m_devices = new DeviceGridModel(this);
    m_history = new DeviceHistoryLoader(watcher, m_devices, this);
    buildUi();
    connect(m_launcher, &RunLauncher::stopAsked, this, [this] { endCommand(true, m_launcher->lastOutput()); });
    connect(m_launcher, &RunLauncher::started, this, [this](qint64 id) {
        endCommand(true, m_launcher->lastOutput());
        // Resume printed the id of the run that continues this one: follow it.
        emit runStarted(id);
    });
    connect(m_launcher, &RunLauncher::failed, this, [this](const QString& message) { endCommand(false, message); });
    m_refreshTimer.setSingleShot(true);
    m_refreshTimer.setInterval(CurvePlot::kRedrawIntervalMs);
    connect(&m_refreshTimer, &QTimer::timeout, this, &LivePage::refreshLabels);
    // Once a second besides: a run whose steps stop is said to have stopped moving.
    m_clock.setInterval(1000);
    connect(&m_clock, &QTimer::timeout, this, &LivePage::refreshLabels);
    m_clock.start();
    if (m_watcher) {
        connect(m_watcher, &StoreWatcher::runChanged, this, &LivePage::onRunChanged);
        connect(m_watcher, &StoreWatcher::runStartLoaded, this, &LivePage::onRunStart);
        connect(m_watcher, &StoreWatcher::metricsAdded, this, &LivePage::onMetrics);
        connect(m_watcher, &StoreWatcher::deviceSamplesAdded, this, &LivePage::onDevices);
        connect(m_watcher, &StoreWatcher::hostStatusesChanged, this, &LivePage::onHostStatuses);
        connect(m_watcher, &StoreWatcher::rankStepsAdded, this, &LivePage::onRankSteps);
        connect(m_watcher, &StoreWatcher::alertsChanged, this, &LivePage::onAlerts);
        connect(m_watcher, &StoreWatcher::slurmJobChanged, this, &LivePage::onSlurmJob);
    }
    refreshLabels();
}

LivePage::~LivePage() {
    if (m_watcher && m_run > 0) m_watcher->unwatch(m_run);
}

void LivePage::buildUi() {
    auto* root = new QVBoxLayout(this);
    root->addLayout(buildRunBar());
    root->addLayout(buildHeader());
    buildBanners(root);
    root->addLayout(buildCurveControls());
    auto* splitter = new QSplitter(Qt::Vertical, this);
    splitter->addWidget(buildPlots(splitter));
    splitter->addWidget(buildBottomTabs(splitter));
    splitter->setStretchFactor(0, 3);
    splitter->setStretchFactor(1, 1);
    root->addWidget(splitter, 1);
}

QLayout* LivePage::buildRunBar() {
    // Which run: picked from the store's runs, or the newest running one followed as it starts.
    auto* runBar = new QHBoxLayout;
    m_picker = new QComboBox(this);
    m_picker->setObjectName(QStringLiteral("runPicker"));
    m_picker->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_picker->setMinimumContentsLength(28);
    m_picker->setPlaceholderText(tr("Pick a run"));
    m_picker->setToolTip(tr("The store's runs, newest first"));
    connect(m_picker, qOverload<int>(&QComboBox::activated), this, [this](int index) {
        const qint64 id = m_picker->itemData(index).toLongLong();
        if (id > 0) pickRun(id);
    });
    m_follow = new QCheckBox(tr("Follow new runs"), this);
    m_follow->setChecked(true);
    m_follow->setToolTip(tr("Switch to a run as it starts, also one started from a terminal "
                            "(picking a run turns this off)"));
    connect(m_follow, &QCheckBox::toggled, this, [this](bool on) {
        if (on) followNewestRun();
    });
    m_resumed = new QLabel(this);
    m_resumed->setObjectName(QStringLiteral("resumedFrom"));
    m_resumed->hide();
    m_openParent = new QPushButton(this);
    m_openParent->setToolTip(tr("Show the run this one continues"));
    m_openParent->hide();
    connect(m_openParent, &QPushButton::clicked, this, [this] {
        if (const std::optional<int64_t> parent = m_snapshot.parentRun()) emit openRun(*parent);
    });
    runBar->addWidget(new QLabel(tr("Run"), this));
    runBar->addWidget(m_picker, 1);
    runBar->addWidget(m_follow);
    runBar->addStretch(1);
    runBar->addWidget(m_resumed);
    runBar->addWidget(m_openParent);
    return runBar;
}

QLayout* LivePage::buildHeader() {
    // What the run is doing and how far along it is.
    auto* header = new QHBoxLayout;
    m_title = new QLabel(this);
    QFont titleFont = m_title->font();
    titleFont.setPointSizeF(titleFont.pointSizeF() * 1.3);
    titleFont.setBold(true);
    m_title->setFont(titleFont);
    m_state = new QLabel(this);
    m_state->setAlignment(Qt::AlignCenter);
    m_state->setMinimumWidth(80);
    m_progress = new QProgressBar(this);
    m_progress->setMinimumWidth(220);
    m_progress->setTextVisible(true);
    m_eta = new QLabel(this);
    m_slurm = new QLabel(this);
    m_slurm->setObjectName(QStringLiteral("slurmJob"));
    m_slurm->hide();
    m_rate = new QLabel(this);
    m_mfu = new QLabel(this);
    m_stop = new QPushButton(tr("Stop"), this);
    m_stop->setToolTip(tr("Ask the run's supervisor to stop the ranks (parallax-cli stop)"));
    m_resume = new QPushButton(tr("Resume"), this);
    m_resumeTip = tr("Start a new run from this run's last checkpoint (parallax-cli resume --detach)");
    m_resume->setToolTip(m_resumeTip);
    connect(m_stop, &QPushButton::clicked, this, &LivePage::stopRun);
    connect(m_resume, &QPushButton::clicked, this, &LivePage::resumeRun);
    m_resumeChanged = new QPushButton(tr("Resume with changes…"), this);
    m_resumeChanged->setObjectName(QStringLiteral("resumeWithChanges"));
    m_resumeChangedTip = tr("Continue from this run's last checkpoint with its spec edited in the New run "
                            "form: another layout, hosts or devices (parallax-cli run SPEC --from RUN)");
    m_resumeChanged->setToolTip(m_resumeChangedTip);
    connect(m_resumeChanged, &QPushButton::clicked, this, [this] {
        if (m_run > 0) emit resumeWithChanges(m_run);
    });
    for (QWidget* w : std::initializer_list<QWidget*>{m_title, m_state})
        header->addWidget(w);
    header->addWidget(m_progress, 1);
    for (QWidget* w : std::initializer_list<QWidget*>{m_eta, m_slurm, m_rate, m_mfu, m_stop, m_resume, m_resumeChanged})
        header->addWidget(w);
    return header;
}

void LivePage::buildBanners(QVBoxLayout* root) {
    m_straggler = new QLabel(this);
    m_straggler->setStyleSheet(QStringLiteral(
        "QLabel { background: #fff3e0; color: #e65100; border: 1px solid #ffb74d; padding: 4px; }"));
    m_straggler->setCursor(Qt::PointingHandCursor);
    m_straggler->installEventFilter(this);
    m_straggler->hide();
    root->addWidget(m_straggler);
    m_hostAlarm = new QLabel(this);
    m_hostAlarm->setObjectName(QStringLiteral("hostAlarm"));
    m_hostAlarm->setWordWrap(true);
    m_hostAlarm->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_hostAlarm->setStyleSheet(QStringLiteral(
        "QLabel { background: #ffebee; color: #b71c1c; border: 2px solid #c62828; padding: 4px; }"));
    m_hostAlarm->hide();
    root->addWidget(m_hostAlarm);
    m_alert = new QLabel(this);
    m_alert->setObjectName(QStringLiteral("runAlert"));
    m_alert->setWordWrap(true);
    m_alert->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_alert->setStyleSheet(QStringLiteral(
        "QLabel { background: #f3e5f5; color: #4a148c; border: 2px solid #8e24aa; padding: 4px; }"));
    m_alert->setToolTip(tr("What the run's supervisor finds from the ranks' flight recorders: a hang when no "
                           "step completes for telemetry.hang_after_s, a straggler from the ranks' compute "
                           "and wait times. The rank named is framed in the device grid."));
    m_alert->setCursor(Qt::PointingHandCursor);
    m_alert->installEventFilter(this);
    m_alert->hide();
    root->addWidget(m_alert);
    root->addWidget(buildFailureBox());
    m_lossWarning = new QLabel(this);
    m_lossWarning->setStyleSheet(QStringLiteral(
        "QLabel { background: #ffebee; color: #b71c1c; border: 1px solid #e57373; padding: 4px; }"));
    m_lossWarning->hide();
    root->addWidget(m_lossWarning);
    m_recovered = new QLabel(this);
    m_recovered->setObjectName(QStringLiteral("recovered"));
    m_recovered->setStyleSheet(QStringLiteral(
        "QLabel { background: #e8f5e9; color: #1b5e20; border: 1px solid #81c784; padding: 4px; }"));
    m_recovered->hide();
    root->addWidget(m_recovered);
    m_commandStatus = new QLabel(this);
    m_commandStatus->setWordWrap(true);
    m_commandStatus->hide();
    root->addWidget(m_commandStatus);
}

QWidget* LivePage::buildFailureBox() {
    // A run that failed says why where its curves stopped, with the way on: change the spec and
    // launch it again (Resume, beside Stop, continues it as it was).
    m_failureBox = new QWidget(this);
    m_failureBox->setObjectName(QStringLiteral("failure"));
    m_failureBox->setStyleSheet(QStringLiteral(
        "QWidget#failure { background: #ffebee; border: 2px solid #c62828; }"
        "QWidget#failure QLabel { color: #b71c1c; }"));
    auto* failureLayout = new QHBoxLayout(m_failureBox);
    failureLayout->setContentsMargins(6, 4, 6, 4);
    m_failure = new QLabel(m_failureBox);
    m_failure->setWordWrap(true);
    m_failure->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_fix = new QPushButton(tr("Fix and relaunch…"), m_failureBox);
    m_fix->setToolTip(tr("Open this run's spec in the New run form, change it and launch it as a new run"));
    connect(m_fix, &QPushButton::clicked, this, [this] {
        if (m_run > 0) emit fixAndRelaunch(m_run);
    });
    failureLayout->addWidget(m_failure, 1);
    failureLayout->addWidget(m_fix);
    m_failureBox->hide();
    return m_failureBox;
}

QLayout* LivePage::buildCurveControls() {
    // Curve controls, shared by the four plots.
    auto* controls = new QHBoxLayout;
    m_axis = new QComboBox(this);
    m_axis->addItem(tr("Step"));
    m_axis->addItem(tr("Wall time"));
    m_axis->addItem(tr("Tokens"));
    connect(m_axis, qOverload<int>(&QComboBox::currentIndexChanged), this, &LivePage::setAxis);
    m_logLoss = new QCheckBox(tr("Log scale"), this);
    m_smoothing = new QSpinBox(this);
    m_smoothing->setRange(0, 99);
    m_smoothing->setValue(90);
    m_smoothing->setSuffix(QStringLiteral("%"));
    m_smoothing->setToolTip(tr("Weight of the exponential moving average drawn over the raw loss "
                               "(0: off), computed on every step"));
    connect(m_smoothing, qOverload<int>(&QSpinBox::valueChanged), this, &LivePage::setLossSmoothing);
    controls->addWidget(new QLabel(tr("x axis"), this));
    controls->addWidget(m_axis);
    controls->addWidget(m_logLoss);
    controls->addWidget(new QLabel(tr("Loss smoothing"), this));
    controls->addWidget(m_smoothing);
    controls->addStretch(1);
    auto* hint = new QLabel(tr("drag/wheel: x · Shift: y · double-click: fit"), this);
    hint->setEnabled(false);
    controls->addWidget(hint);
    return controls;
}

QWidget* LivePage::buildPlots(QWidget* parent) {
    auto* plots = new QWidget(parent);
    auto* grid = new QGridLayout(plots);
    grid->setContentsMargins(0, 0, 0, 0);
    m_lossPlot = new CurvePlot(plots);
    m_lossPlot->setTitle(tr("Loss"));
    m_lossPlot->addCurve(tr("loss"), m_snapshot.loss(), MetricChannel::Raw, QColor(30, 136, 229, 90), 1.0);
    m_lossPlot->addCurve(tr("loss (smoothed)"), m_snapshot.loss(), MetricChannel::Smoothed, QColor(21, 101, 192), 2.0);
    m_lossPlot->setLegendVisible(true);
    m_lrPlot = new CurvePlot(plots);
    m_lrPlot->setTitle(tr("Learning rate"));
    m_lrPlot->addCurve(tr("lr"), m_snapshot.learningRate(), MetricChannel::Raw, QColor(142, 36, 170), 1.5);
    m_gradPlot = new CurvePlot(plots);
    m_gradPlot->setTitle(tr("Gradient norm"));
    m_gradPlot->addCurve(tr("grad norm"), m_snapshot.gradNorm(), MetricChannel::Raw, QColor(239, 108, 0), 1.2);
    m_throughputPlot = new CurvePlot(plots);
    m_throughputPlot->setTitle(tr("Throughput"));
    m_throughputPlot->setValueLabel(tr("tokens/s"));
    m_throughputPlot->addCurve(tr("tokens/s"), m_snapshot.tokensPerSecond(), MetricChannel::Raw, QColor(46, 125, 50), 1.2);
    grid->addWidget(m_lossPlot, 0, 0);
    grid->addWidget(m_lrPlot, 0, 1);
    grid->addWidget(m_gradPlot, 1, 0);
    grid->addWidget(m_throughputPlot, 1, 1);
    const std::vector<CurvePlot*> all = {m_lossPlot, m_lrPlot, m_gradPlot, m_throughputPlot};
    // Panning one plot pans them all, so that a spike lines up across metrics.
    for (CurvePlot* p : all) {
        connect(p, &CurvePlot::userRangeChanged, this, [all, p](double lo, double hi) {
            for (CurvePlot* other : all) {
                if (other != p) other->setXRange(lo, hi);
            }
        });
        connect(p, &CurvePlot::viewReset, this, [all, p] {
            for (CurvePlot* other : all) {
                if (other != p) other->resetView();
            }
        });
    }
    connect(m_logLoss, &QCheckBox::toggled, this, [this](bool on) {
        m_lossPlot->setLogScale(on);
        m_gradPlot->setLogScale(on);
    });
    return plots;
}

QWidget* LivePage::buildBottomTabs(QWidget* parent) {
    // The devices alone, as before; a run that draws images gets a Samples tab beside them, so
    // that the curves above keep their room.
    m_bottomTabs = new QTabWidget(parent);
    m_bottomTabs->setObjectName(QStringLiteral("liveBottomTabs"));
    m_bottomTabs->setTabBarAutoHide(true);
    m_bottomTabs->setDocumentMode(true);
    m_bottomTabs->addTab(buildDevices(m_bottomTabs), tr("Devices"));
    m_samples = new SamplesPanel(m_watcher, m_bottomTabs);
    m_samples->hide();
    connect(m_samples, &SamplesPanel::availabilityChanged, this, [this](bool available) {
        const int at = m_bottomTabs->indexOf(m_samples);
        if (available && at < 0) m_bottomTabs->addTab(m_samples, tr("Samples"));
        else if (!available && at >= 0) m_bottomTabs->removeTab(at);
    });
    return m_bottomTabs;
}

QWidget* LivePage::buildDevices(QWidget* parent) {
    auto* devices = new QSplitter(Qt::Horizontal, parent);
    m_deviceView = new QTableView(devices);
    m_deviceView->setModel(m_devices);
    TableExport::install(m_deviceView, QStringLiteral("devices"));
    m_deviceView->setItemDelegate(new HostAlarmDelegate(m_deviceView));
    m_deviceView->setSelectionMode(QAbstractItemView::NoSelection);
    m_deviceView->setWordWrap(true);
    m_deviceView->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    m_deviceView->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    devices->addWidget(m_deviceView);
    devices->addWidget(buildHeatMap(devices));
    // Half each: at 1,024 ranks a host's eight cells need the room to stay readable at 1280 wide.
    devices->setStretchFactor(0, 1);
    devices->setStretchFactor(1, 1);
    return devices;
}

QWidget* LivePage::buildHeatMap(QWidget* parent) {
    // A run opens at its last window; Earlier reads the one before it into the map.
    auto* box = new QWidget(parent);
    auto* layout = new QVBoxLayout(box);
    layout->setContentsMargins(0, 0, 0, 0);
    auto* bar = new QHBoxLayout;
    m_earlier = new QPushButton(tr("Earlier"), box);
    m_earlier->setObjectName(QStringLiteral("earlierHistory"));
    m_earlier->setToolTip(tr("The map opens at the run's last %1 minutes of device samples and last %2 steps; "
                             "load the ones before those shown")
                              .arg(StoreWatcher::kOpenWindowSeconds / 60)
                              .arg(StoreWatcher::kOpenRankSteps));
    m_earlier->setEnabled(false);
    connect(m_earlier, &QPushButton::clicked, m_history, &DeviceHistoryLoader::loadEarlier);
    connect(m_history, &DeviceHistoryLoader::changed, this, [this] { m_earlier->setEnabled(m_history->canLoadEarlier()); });
    bar->addStretch(1);
    bar->addWidget(m_earlier);
    layout->addLayout(bar);
    m_heatMap = new HeatMapPlot(box);
    m_heatMap->setModel(m_devices);
    layout->addWidget(m_heatMap, 1);
    return box;
}

void LivePage::setRun(qint64 run) {
    {
        const QSignalBlocker block(m_follow);
        m_follow->setChecked(false);
    }
    showRun(run);
}

void LivePage::pickRun(qint64 run) { setRun(run); }

void LivePage::showRun(qint64 run) {
    if (run == m_run) return;
    if (m_watcher && m_run > 0) m_watcher->unwatch(m_run);
    m_run = run;
    const std::optional<RunRecord> shown = m_runs && run > 0 ? m_runs->run(run) : std::nullopt;
    m_sawRunning = shown && shown->state == RunState::Running;
    m_snapshot.clear();
    m_devices->clear();
    m_history->setRun(m_run);
    m_shownStraggler.reset();
    m_commandStatus->hide();
    m_hostAlarm->hide();
    m_hostAlarm->clear();
    m_alert->hide();
    m_alert->clear();
    m_slurmJob.reset();
    m_slurm->hide();
    for (CurvePlot* p : {m_lossPlot, m_lrPlot, m_gradPlot, m_throughputPlot}) p->resetView();
    if (m_watcher && m_run > 0) m_watcher->watch(m_run);
    m_samples->setRun(m_run);
    refreshPicker();
    refreshLabels();
}

void LivePage::setRunList(RunListModel* runs) {
    if (m_runs) disconnect(m_runs, nullptr, this, nullptr);
    m_runs = runs;
    if (m_runs) {
        const auto changed = [this] {
            followNewestRun();
            refreshPicker();
            scheduleRefresh(); // a run that continues the one shown turns Resume off
        };
        connect(m_runs, &QAbstractItemModel::modelReset, this, changed);
        connect(m_runs, &QAbstractItemModel::rowsInserted, this, changed);
        connect(m_runs, &QAbstractItemModel::rowsRemoved, this, changed);
        connect(m_runs, &QAbstractItemModel::layoutChanged, this, changed);
        connect(m_runs, &QAbstractItemModel::dataChanged, this, changed);
    }
    followNewestRun();
    refreshPicker();
}

void LivePage::setFollowNewRuns(bool follow) { m_follow->setChecked(follow); }

bool LivePage::followsNewRuns() const { return m_follow->isChecked(); }

QStringList LivePage::pickerTexts() const {
    QStringList texts;
    for (int i = 0; i < m_picker->count(); ++i) texts << m_picker->itemText(i);
    return texts;
}

void LivePage::refreshPicker() {
    QStringList texts;
    QList<qint64> ids;
    if (m_runs) {
        // The model keeps its rows newest first.
        for (int row = 0; row < m_runs->rowCount(); ++row) {
            const RunRecord& r = m_runs->record(row);
            ids << r.id;
            texts << tr("#%1  %2 · %3").arg(r.id).arg(QString::fromStdString(r.name), QString::fromStdString(runStateName(r.state)));
        }
    }
    // Rebuilt only when an entry changed, so that an open popup is not disturbed every second.
    if (texts != pickerTexts()) {
        const QSignalBlocker block(m_picker);
        m_picker->clear();
        for (int i = 0; i < texts.size(); ++i) m_picker->addItem(texts[i], ids[i]);
    }
    const QSignalBlocker block(m_picker);
    m_picker->setCurrentIndex(m_picker->findData(m_run));
}

void LivePage::followNewestRun() {
    if (!m_runs) return;
    // The run shown ended while it was watched and goes on as another (launch.on_host_failure =
    // "resume", or a resume started elsewhere): that one is followed, new runs followed or not.
    if (const std::optional<RunRecord> shown = m_run > 0 ? m_runs->run(m_run) : std::nullopt) {
        if (shown->state == RunState::Running) m_sawRunning = true;
        for (int row = 0; m_sawRunning && isTerminal(shown->state) && row < m_runs->rowCount(); ++row) {
            const RunRecord& r = m_runs->record(row);
            if (r.parent_run != m_run || r.state != RunState::Running) continue;
            const qint64 before = m_run;
            showRun(r.id);
            emit runFollowed(r.id, tr("Live follows run #%1, which continues #%2 (%3: %4)")
                                       .arg(r.id)
                                       .arg(before)
                                       .arg(QString::fromStdString(runStateName(shown->state)),
                                            QString::fromStdString(shown->exit_reason)));
            return;
        }
    }
    if (!m_follow->isChecked()) return;
    qint64 newest = 0;
    for (int row = 0; row < m_runs->rowCount() && newest == 0; ++row) {
        const RunRecord& r = m_runs->record(row);
        if (r.state == RunState::Running) newest = r.id;
    }
    // Only a run newer than the one shown: an older run still going does not take the page back.
    if (newest <= m_run) return;
    const qint64 before = m_run;
    showRun(newest);
    const std::optional<RunRecord> r = m_runs->run(newest);
    const QString name = r ? QString::fromStdString(r->name) : QString();
    emit runFollowed(newest, before > 0 ? tr("Live follows run #%1 (%2), which started; it showed #%3")
                                              .arg(newest)
                                              .arg(name)
                                              .arg(before)
                                        : tr("Live shows run #%1 (%2), which is running").arg(newest).arg(name));
}

QString LivePage::resumedText() const { return m_resumed->isHidden() ? QString() : m_resumed->text(); }

QString LivePage::alertText() const { return m_alert->isHidden() ? QString() : m_alert->text(); }

void LivePage::onRankSteps(qint64 run, const std::vector<RankStepEvent>& rows, bool reset) {
    if (run != m_run) return;
    m_devices->addRankSteps(rows, reset);
}

void LivePage::onSlurmJob(qint64 run, const SlurmJob& job) {
    if (run != m_run) return;
    m_slurmJob = job;
    refreshSlurmJob();
}

void LivePage::refreshSlurmJob() {
    if (!m_slurmJob) {
        m_slurm->hide();
        return;
    }
    const bool ended = m_snapshot.record() && isTerminal(m_snapshot.record()->state);
    const LiveSummary::Text job = LiveSummary::slurmJob(*m_slurmJob, ended, QDateTime::currentSecsSinceEpoch());
    m_slurm->setText(job.text);
    m_slurm->setToolTip(job.tip);
    m_slurm->show();
}

void LivePage::onAlerts(qint64 run, const std::vector<RunAlert>& alerts) {
    if (run != m_run) return;
    m_snapshot.setAlerts(alerts);
    m_devices->setAlerts(alerts);
    const QString lines = LiveSummary::alertLines(m_snapshot.activeAlerts());
    m_alert->setText(lines);
    m_alert->setVisible(!lines.isEmpty());
    scheduleRefresh(); // the straggler banner gives way to the supervisor's
}

void LivePage::setCliProgram(const QString& program) { m_launcher->setCliPath(program); }

QString LivePage::cliProgram() const { return m_launcher->cliPath(); }

void LivePage::setStragglerThreshold(double fraction) {
    m_snapshot.setStragglerThreshold(fraction);
    scheduleRefresh();
}

void LivePage::onRunChanged(const RunRecord& record) {
    if (record.id != m_run) return;
    m_snapshot.setRecord(record);
    m_devices->setCpuThreadsPerRank(m_snapshot.cpuThreadsPerRank());
    m_devices->setRunEnded(isTerminal(record.state));
    scheduleRefresh();
}

void LivePage::onRunStart(qint64 run, const RunStartEvent& start) {
    if (run != m_run) return;
    m_snapshot.setRunStart(start);
    m_devices->setRankHosts(start.hosts);
    m_devices->setCpuThreadsPerRank(m_snapshot.cpuThreadsPerRank());
    scheduleRefresh();
}

void LivePage::onMetrics(qint64 run, const std::vector<StepEvent>& rows, bool reset) {
    if (run != m_run) return;
    m_snapshot.addMetrics(rows, reset);
    for (CurvePlot* p : {m_lossPlot, m_lrPlot, m_gradPlot, m_throughputPlot}) p->dataChanged();
    scheduleRefresh();
}

void LivePage::onDevices(qint64 run, const std::vector<DeviceEvent>& rows, bool reset) {
    if (run != m_run) return;
    m_devices->addSamples(rows, reset);
}

void LivePage::onHostStatuses(qint64 run, const std::vector<HostStatus>& statuses) {
    if (run != m_run) return;
    m_devices->setHostStatuses(statuses);
    // Named at once and apart from the grid: a host whose name differs from what its ranks report
    // (an alias in the profile) has no row to outline, and must still be seen.
    QStringList alarms;
    for (const HostStatus& s : statuses)
        if (DeviceGridModel::isAlarm(s)) alarms << DeviceGridModel::hostStatusText(s);
    m_hostAlarm->setText(alarms.join(QChar('\n')));
    m_hostAlarm->setToolTip(alarms.isEmpty() ? QString()
                                             : tr("The supervisor probes every host over ssh every few seconds; "
                                                  "a host silent for launch.host_timeout_s fails the run"));
    m_hostAlarm->setVisible(!alarms.isEmpty());
}

QString LivePage::hostAlarmText() const { return m_hostAlarm->isHidden() ? QString() : m_hostAlarm->text(); }

QString LivePage::failureText() const { return m_failureBox->isHidden() ? QString() : m_failure->text(); }

void LivePage::scheduleRefresh() {
    if (!m_refreshTimer.isActive()) m_refreshTimer.start();
}

QString LivePage::stateText() const {
    const auto& r = m_snapshot.record();
    return r ? QString::fromStdString(runStateName(r->state)) : QString();
}

QString LivePage::progressText() const { return m_progressText; }

QString LivePage::stragglerText() const { return m_shownStraggler ? m_straggler->text() : QString(); }

bool LivePage::stopEnabled() const { return m_stop->isEnabled(); }
bool LivePage::resumeEnabled() const { return m_resume->isEnabled(); }

void LivePage::refreshLabels() {
    refreshSlurmJob();
    LiveSummary::Context context;
    context.run = m_run;
    context.commandBusy = m_launcher->isBusy();
    context.now = static_cast<double>(QDateTime::currentMSecsSinceEpoch()) / 1000.0;
    if (const std::optional<int64_t> parent = m_snapshot.parentRun(); parent && m_runs) context.parent = m_runs->run(*parent);
    if (m_runs && m_run > 0) context.resumeRefused = ResumeCheck::of(*m_runs, m_run).why;
    const LiveSummary s = LiveSummary::of(m_snapshot, context);

    m_resumed->setVisible(s.resumedFrom.has_value());
    m_openParent->setVisible(s.resumedFrom.has_value());
    if (s.resumedFrom) {
        m_resumed->setText(s.resumedFrom->text);
        m_resumed->setToolTip(s.resumedFrom->tip);
        m_openParent->setText(s.openParent);
    } else {
        m_resumed->clear();
    }
    m_title->setText(s.title);
    m_state->setText(s.state);
    m_state->setStyleSheet(s.stateStyle);
    if (s.stateTip) m_state->setToolTip(*s.stateTip);
    if (!s.failure.isEmpty()) m_failure->setText(s.failure);
    m_failureBox->setVisible(!s.failure.isEmpty());

    m_progress->setRange(0, s.progressMaximum);
    m_progress->setValue(s.progressValue);
    m_progress->setFormat(s.progressFormat);
    m_progressText = s.progress;
    m_eta->setText(s.eta.text);
    m_eta->setToolTip(s.eta.tip);
    m_rate->setText(s.rate);
    if (s.rateTip) m_rate->setToolTip(*s.rateTip);
    m_mfu->setText(s.mfu);
    if (s.mfuTip) m_mfu->setToolTip(*s.mfuTip);

    m_shownStraggler = s.straggler;
    m_straggler->setText(s.stragglerText);
    m_straggler->setVisible(s.straggler.has_value());
    if (!s.lossWarning.isEmpty()) m_lossWarning->setText(s.lossWarning);
    m_lossWarning->setVisible(!s.lossWarning.isEmpty());
    m_recovered->setText(s.recovered.text);
    m_recovered->setToolTip(s.recovered.tip);
    m_recovered->setVisible(!s.recovered.text.isEmpty());

    m_stop->setEnabled(s.stopEnabled);
    m_resume->setEnabled(s.resumeEnabled);
    m_resumeChanged->setEnabled(s.resumeEnabled);
    m_resume->setToolTip(s.resumeRefused.isEmpty() ? m_resumeTip : s.resumeRefused);
    m_resumeChanged->setToolTip(s.resumeRefused.isEmpty() ? m_resumeChangedTip : s.resumeRefused);
}

void LivePage::stopRun() {
    if (m_run <= 0 || m_launcher->isBusy()) return;
    beginCommand({QStringLiteral("stop"), QString::number(m_run)});
    m_launcher->stop(m_run);
    refreshLabels();
}

void LivePage::resumeRun() {
    if (m_run <= 0 || m_launcher->isBusy()) return;
    // A run that another run continues is not resumed twice (ResumeCheck).
    if (m_runs && !ResumeCheck::of(*m_runs, m_run).why.isEmpty()) return;
    beginCommand({QStringLiteral("resume"), QString::number(m_run), QStringLiteral("--detach")});
    m_launcher->resume(m_run);
    refreshLabels();
}

void LivePage::beginCommand(const QStringList& arguments) {
    // The store this console watches, not parallax-cli's default: a console opened on another
    // store (--store, File > Open store) must stop and resume the runs it shows.
    m_launcher->setStorePath(m_watcher ? m_watcher->storePath() : QString());
    m_command = arguments;
    m_commandStatus->setText(tr("parallax-cli %1 ...").arg(arguments.join(QLatin1Char(' '))));
    m_commandStatus->setStyleSheet(QString());
    m_commandStatus->show();
}

void LivePage::endCommand(bool ok, const QString& output) {
    // On failure `output` is RunLauncher's message, which names the command.
    m_commandStatus->setText(ok ? tr("parallax-cli %1: done. %2").arg(m_command.join(QLatin1Char(' ')), output) : output);
    m_commandStatus->setStyleSheet(ok ? QString() : QStringLiteral("QLabel { color: #c62828; }"));
    m_commandStatus->show();
    if (m_watcher) m_watcher->pollNow();
    emit commandFinished(m_command, ok, output);
    refreshLabels();
}

void LivePage::setAxis(int index) {
    const MetricAxis axis = index == 1 ? MetricAxis::Time : index == 2 ? MetricAxis::Tokens : MetricAxis::Step;
    for (CurvePlot* p : {m_lossPlot, m_lrPlot, m_gradPlot, m_throughputPlot}) p->setAxis(axis);
}

void LivePage::setLossSmoothing() {
    m_snapshot.setLossSmoothing(MetricSmoothing::ema(m_smoothing->value() / 100.0));
    m_lossPlot->dataChanged();
}

bool LivePage::eventFilter(QObject* watched, QEvent* event) {
    if (watched == m_straggler && event->type() == QEvent::MouseButtonRelease && m_shownStraggler) {
        emit showRankLogs(m_run, m_shownStraggler->rank);
        return true;
    }
    if (watched == m_alert && event->type() == QEvent::MouseButtonRelease && !m_alert->hasSelectedText()) {
        // The log of the first rank the alerts name.
        for (const RunAlert& a : m_snapshot.activeAlerts()) {
            if (!a.ranks.empty()) {
                emit showRankLogs(m_run, a.ranks.front());
                return true;
            }
        }
    }
    return QWidget::eventFilter(watched, event);
}

void LivePage::paintIcon(QPainter& p, const QColor&) {
    QPainterPath path(QPointF(2, 13));
    for (const QPointF& pt : {QPointF(7, 13), QPointF(9.5, 5), QPointF(13.5, 20), QPointF(16, 11), QPointF(17.5, 13),
                              QPointF(22, 13)})
        path.lineTo(pt);
    p.drawPath(path);
}

} // namespace parallax
