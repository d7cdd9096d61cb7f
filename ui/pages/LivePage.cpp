#include "ui/pages/LivePage.h"
#include "ui/widgets/TableExport.h"

#include "core/util/Duration.h"

#include "ui/models/DeviceGridModel.h"
#include "ui/models/RunLauncher.h"
#include "ui/models/RunListModel.h"
#include "ui/models/StoreWatcher.h"
#include "ui/plots/CurvePlot.h"
#include "ui/plots/HeatMapPlot.h"
#include "ui/models/RunColors.h"
#include "ui/widgets/HostAlarmDelegate.h"

#include <QPainter>
#include <QPainterPath>
#include <QCheckBox>
#include <QComboBox>
#include <QDateTime>
#include <QCoreApplication>
#include <QDir>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMouseEvent>
#include <QProcess>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <climits>

namespace parallax {

namespace {

QString durationText(double seconds) {
    return QString::fromStdString(parallax::formatDuration(std::max(0.0, seconds), " "));
}

QString formatRate(double v) {
    if (!std::isfinite(v)) return QStringLiteral("-");
    if (v >= 1e9) return QString::number(v / 1e9, 'f', 2) + QLatin1Char('G');
    if (v >= 1e6) return QString::number(v / 1e6, 'f', 2) + QLatin1Char('M');
    if (v >= 1e3) return QString::number(v / 1e3, 'f', 1) + QLatin1Char('k');
    return QString::number(v, 'f', 0);
}

} // namespace

LivePage::LivePage(StoreWatcher* watcher, QWidget* parent)
    : QWidget(parent), m_watcher(watcher),
      m_cli(QDir(QCoreApplication::applicationDirPath()).filePath(QStringLiteral("parallax-cli"))) {
    m_devices = new DeviceGridModel(this);
    buildUi();
    m_refreshTimer.setSingleShot(true);
    m_refreshTimer.setInterval(CurvePlot::kRedrawIntervalMs);
    connect(&m_refreshTimer, &QTimer::timeout, this, &LivePage::refreshLabels);
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
    root->addLayout(runBar);

    // Header: what the run is doing and how far along it is.
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
    m_resume->setToolTip(tr("Start a new run from this run's last checkpoint (parallax-cli resume --detach)"));
    connect(m_stop, &QPushButton::clicked, this, &LivePage::stopRun);
    connect(m_resume, &QPushButton::clicked, this, &LivePage::resumeRun);
    m_resumeChanged = new QPushButton(tr("Resume with changes…"), this);
    m_resumeChanged->setObjectName(QStringLiteral("resumeWithChanges"));
    m_resumeChanged->setToolTip(tr("Continue from this run's last checkpoint with its spec edited in the New run "
                                   "form: another layout, hosts or devices (parallax-cli run SPEC --from RUN)"));
    connect(m_resumeChanged, &QPushButton::clicked, this, [this] {
        if (m_run > 0) emit resumeWithChanges(m_run);
    });
    header->addWidget(m_title);
    header->addWidget(m_state);
    header->addWidget(m_progress, 1);
    header->addWidget(m_eta);
    header->addWidget(m_slurm);
    header->addWidget(m_rate);
    header->addWidget(m_mfu);
    header->addWidget(m_stop);
    header->addWidget(m_resume);
    header->addWidget(m_resumeChanged);
    root->addLayout(header);

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
    root->addWidget(m_failureBox);
    m_lossWarning = new QLabel(this);
    m_lossWarning->setStyleSheet(QStringLiteral(
        "QLabel { background: #ffebee; color: #b71c1c; border: 1px solid #e57373; padding: 4px; }"));
    m_lossWarning->hide();
    root->addWidget(m_lossWarning);
    m_commandStatus = new QLabel(this);
    m_commandStatus->setWordWrap(true);
    m_commandStatus->hide();
    root->addWidget(m_commandStatus);

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
    root->addLayout(controls);

    auto* splitter = new QSplitter(Qt::Vertical, this);
    auto* plots = new QWidget(splitter);
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

    auto* devices = new QSplitter(Qt::Horizontal, splitter);
    m_deviceView = new QTableView(devices);
    m_deviceView->setModel(m_devices);
    TableExport::install(m_deviceView, QStringLiteral("devices"));
    m_deviceView->setItemDelegate(new HostAlarmDelegate(m_deviceView));
    m_deviceView->setSelectionMode(QAbstractItemView::NoSelection);
    m_deviceView->setWordWrap(true);
    m_deviceView->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    m_deviceView->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_heatMap = new HeatMapPlot(devices);
    m_heatMap->setModel(m_devices);
    devices->addWidget(m_deviceView);
    devices->addWidget(m_heatMap);
    devices->setStretchFactor(0, 1);
    devices->setStretchFactor(1, 2);
    splitter->addWidget(plots);
    splitter->addWidget(devices);
    splitter->setStretchFactor(0, 3);
    splitter->setStretchFactor(1, 1);
    root->addWidget(splitter, 1);
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
            texts << tr("#%1  %2 · %3").arg(r.id).arg(QString::fromStdString(r.name), QString::fromStdString(r.state));
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
        for (int row = 0; m_sawRunning && RunState::isTerminal(shown->state) && row < m_runs->rowCount(); ++row) {
            const RunRecord& r = m_runs->record(row);
            if (r.parent_run != m_run || r.state != RunState::Running) continue;
            const qint64 before = m_run;
            showRun(r.id);
            emit runFollowed(r.id, tr("Live follows run #%1, which continues #%2 (%3: %4)")
                                       .arg(r.id)
                                       .arg(before)
                                       .arg(QString::fromStdString(shown->state),
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

void LivePage::refreshResumed() {
    const std::optional<int64_t> parent = m_snapshot.parentRun();
    m_resumed->setVisible(parent.has_value());
    m_openParent->setVisible(parent.has_value());
    if (!parent) {
        m_resumed->clear();
        return;
    }
    const std::optional<RunRecord> r = m_runs ? m_runs->run(*parent) : std::nullopt;
    QString text = r ? tr("Resumed from #%1 (%2)").arg(*parent).arg(QString::fromStdString(r->name))
                     : tr("Resumed from #%1").arg(*parent);
    if (const std::optional<int64_t> step = m_snapshot.resumedAtStep()) text += tr(" at step %1").arg(*step);
    m_resumed->setText(text);
    m_resumed->setToolTip(tr("This run continues #%1 from its checkpoint; its curves start where it took over")
                              .arg(*parent));
    m_openParent->setText(tr("Open #%1").arg(*parent));
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
    const SlurmJob& j = *m_slurmJob;
    const bool ended = m_snapshot.record() && RunState::isTerminal(m_snapshot.record()->state);
    QString text = tr("Slurm job %1 · %2").arg(QString::fromStdString(j.job_id), QString::fromStdString(j.state));
    if (!j.reason.empty()) text += QStringLiteral(" (%1)").arg(QString::fromStdString(j.reason));
    if (j.queue_position > 0 && j.state == "PENDING") text += tr(" · place %1 in the queue").arg(j.queue_position);
    if (j.time_left_s >= 0 && !ended) {
        // As Slurm said it then, less the time since.
        const double left = std::max(0.0, double(j.time_left_s) - (QDateTime::currentSecsSinceEpoch() - j.t));
        text += tr(" · %1 left").arg(durationText(left));
    }
    m_slurm->setText(text);
    m_slurm->setToolTip(tr("%1 job%2; Slurm's state as of %3")
                            .arg(j.mode == "batch" ? tr("A batch") : tr("An srun"))
                            .arg(j.nodes.empty() ? QString() : tr(" on %1").arg(QString::fromStdString(j.nodes)))
                            .arg(QDateTime::fromSecsSinceEpoch(qint64(j.t)).toString(QStringLiteral("HH:mm:ss"))));
    m_slurm->show();
}

void LivePage::onAlerts(qint64 run, const std::vector<RunAlert>& alerts) {
    if (run != m_run) return;
    m_snapshot.setAlerts(alerts);
    m_devices->setAlerts(alerts);
    QStringList lines;
    for (const RunAlert& a : m_snapshot.activeAlerts()) {
        QString kind = QString::fromStdString(a.kind);
        if (!kind.isEmpty()) kind[0] = kind[0].toUpper();
        lines << kind + QStringLiteral(": ") + QString::fromStdString(a.message);
    }
    m_alert->setText(lines.join(QChar('\n')));
    m_alert->setVisible(!lines.isEmpty());
    scheduleRefresh(); // the straggler banner gives way to the supervisor's
}

void LivePage::setCliProgram(const QString& program) { m_cli = program; }

void LivePage::setStragglerThreshold(double fraction) {
    m_snapshot.setStragglerThreshold(fraction);
    scheduleRefresh();
}

void LivePage::onRunChanged(const RunRecord& record) {
    if (record.id != m_run) return;
    m_snapshot.setRecord(record);
    m_devices->setCpuThreadsPerRank(m_snapshot.cpuThreadsPerRank());
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
    return r ? QString::fromStdString(r->state) : QString();
}

QString LivePage::progressText() const {
    const int64_t total = m_snapshot.stepsTotal();
    const int64_t done = m_snapshot.stepsDone();
    if (total <= 0) return tr("step %1").arg(done);
    return tr("step %1 / %2").arg(done).arg(total);
}

QString LivePage::stragglerText() const { return m_shownStraggler ? m_straggler->text() : QString(); }

bool LivePage::stopEnabled() const { return m_stop->isEnabled(); }
bool LivePage::resumeEnabled() const { return m_resume->isEnabled(); }

void LivePage::refreshLabels() {
    refreshResumed();
    refreshSlurmJob();
    const auto& record = m_snapshot.record();
    if (!record) {
        m_title->setText(m_run > 0 ? tr("Run %1").arg(m_run) : tr("No run selected"));
        m_state->clear();
        m_state->setStyleSheet(QString());
    } else {
        m_title->setText(tr("%1 #%2").arg(QString::fromStdString(record->name)).arg(record->id));
        m_state->setText(QString::fromStdString(record->state));
        m_state->setStyleSheet(QStringLiteral("QLabel { color: white; background: %1; border-radius: 3px; padding: 2px 6px; }")
                                   .arg(RunColors::stateColor(record->state).isValid()
                                            ? RunColors::stateColor(record->state).name()
                                            : QStringLiteral("#757575")));
        m_state->setToolTip(QString::fromStdString(record->exit_reason));
    }
    const bool failed = record && (record->state == RunState::Failed || record->state == RunState::Lost);
    if (failed) {
        QString text = record->state == RunState::Lost ? tr("Lost") : tr("Failed");
        if (record->last_step >= 0) {
            const int64_t done = stepsDoneAfter(record->last_step);
            text += done == 1 ? tr(" after 1 step") : tr(" after %1 steps").arg(done);
        }
        text += QStringLiteral(": ") + (record->exit_reason.empty() ? tr("no reason was recorded")
                                                                   : QString::fromStdString(record->exit_reason));
        if (record->exit_code) text += tr(" (exit code %1)").arg(*record->exit_code);
        m_failure->setText(text);
    }
    m_failureBox->setVisible(failed);

    const int64_t total = m_snapshot.stepsTotal();
    const int64_t done = m_snapshot.stepsDone();
    m_progress->setRange(0, static_cast<int>(std::clamp<int64_t>(total > 0 ? total : 1, 1, INT_MAX)));
    m_progress->setValue(static_cast<int>(std::clamp<int64_t>(done, 0, m_progress->maximum())));
    const auto fraction = m_snapshot.progress();
    m_progress->setFormat(fraction ? tr("%1 (%2%)").arg(progressText()).arg(*fraction * 100.0, 0, 'f', 1)
                                   : progressText());

    const auto eta = m_snapshot.etaSeconds();
    const auto sps = m_snapshot.stepsPerSecond();
    m_eta->setText(eta ? tr("ETA %1").arg(durationText(*eta)) : QString());
    m_eta->setToolTip(sps ? tr("%1 steps/s over the last %2 steps").arg(*sps, 0, 'g', 3).arg(RunSnapshot::kWindowSteps)
                          : QString());
    const auto& last = m_snapshot.lastStep();
    if (last) {
        m_rate->setText(tr("%1 tok/s").arg(formatRate(last->tokens_per_s)));
        m_rate->setToolTip(tr("step %1 ms on rank 0 (fastest rank %2 ms, slowest %3 ms on rank %4)")
                               .arg(last->step_ms, 0, 'f', 1)
                               .arg(last->step_ms_min, 0, 'f', 1)
                               .arg(last->step_ms_max, 0, 'f', 1)
                               .arg(last->slowest_rank));
        m_mfu->setText(std::isfinite(last->mfu) ? tr("MFU %1%").arg(last->mfu * 100.0, 0, 'f', 1) : QString());
        if (m_snapshot.runStart() && m_snapshot.runStart()->peak_flops > 0) {
            m_mfu->setToolTip(tr("model FLOPs utilization against a dense peak of %1 TFLOP/s per device")
                                  .arg(m_snapshot.runStart()->peak_flops / 1e12, 0, 'f', 1));
        }
    } else {
        m_rate->clear();
        m_mfu->clear();
    }

    // The supervisor's straggler alert, from each rank's compute time, says more than the spread
    // of step times; this banner is for runs without one.
    const std::vector<RunAlert> active = m_snapshot.activeAlerts();
    const bool stragglerAlert = std::any_of(active.begin(), active.end(),
                                            [](const RunAlert& a) { return a.kind == "straggler"; });
    m_shownStraggler = stragglerAlert ? std::nullopt : m_snapshot.straggler();
    if (m_shownStraggler) {
        QString where;
        if (m_snapshot.runStart()) {
            const auto& rs = *m_snapshot.runStart();
            const size_t r = static_cast<size_t>(m_shownStraggler->rank);
            if (r < rs.hosts.size()) where = QString::fromStdString(rs.hosts[r]);
            if (r < rs.devices.size()) where += (where.isEmpty() ? QString() : QStringLiteral(", ")) + QString::fromStdString(rs.devices[r]);
        }
        m_straggler->setText(tr("Straggler: rank %1%2 was the slowest in %3 of the last %4 steps; "
                                "step times differ by %5% (median). Click to see its log.")
                                 .arg(m_shownStraggler->rank)
                                 .arg(where.isEmpty() ? QString() : QStringLiteral(" (%1)").arg(where))
                                 .arg(m_shownStraggler->slowestSteps)
                                 .arg(m_shownStraggler->windowSteps)
                                 .arg(m_shownStraggler->spread * 100.0, 0, 'f', 0));
        m_straggler->show();
    } else {
        m_straggler->hide();
        m_straggler->clear();
    }

    if (const auto bad = m_snapshot.firstNonFiniteLossStep()) {
        m_lossWarning->setText(tr("The loss is not a number from step %1 on (NaN or infinite).").arg(*bad));
        m_lossWarning->show();
    } else {
        m_lossWarning->hide();
    }

    const bool busy = m_process && m_process->state() != QProcess::NotRunning;
    const std::string state = record ? record->state : std::string();
    m_stop->setEnabled(!busy && (state == RunState::Running || state == RunState::Queued));
    m_resume->setEnabled(!busy && (state == RunState::Stopped || state == RunState::Failed ||
                                   state == RunState::Lost));
    m_resumeChanged->setEnabled(m_resume->isEnabled());
}

void LivePage::stopRun() {
    if (m_run > 0) runCli({QStringLiteral("stop"), QString::number(m_run)});
}

void LivePage::resumeRun() {
    if (m_run > 0) runCli({QStringLiteral("resume"), QString::number(m_run), QStringLiteral("--detach")});
}

void LivePage::runCli(const QStringList& arguments) {
    if (m_process && m_process->state() != QProcess::NotRunning) return;
    auto* process = new QProcess(this);
    m_process = process;
    process->setProgram(m_cli);
    // The store this console watches, not parallax-cli's default: a console opened on another
    // store (--store, File > Open store) must stop and resume the runs it shows.
    QStringList argv;
    if (m_watcher && !m_watcher->storePath().isEmpty()) argv << QStringLiteral("--store") << m_watcher->storePath();
    process->setArguments(argv + arguments);
    process->setProcessChannelMode(QProcess::MergedChannels);
    const QString what = QStringLiteral("parallax-cli ") + arguments.join(QLatin1Char(' '));
    connect(process, &QProcess::finished, this, [this, process, arguments, what](int code, QProcess::ExitStatus status) {
        const QString output = QString::fromLocal8Bit(process->readAll()).trimmed();
        const bool ok = status == QProcess::NormalExit && code == 0;
        m_commandStatus->setText(ok ? tr("%1: done. %2").arg(what, output)
                                    : tr("%1 failed (exit %2): %3").arg(what).arg(code).arg(output));
        m_commandStatus->setStyleSheet(ok ? QString() : QStringLiteral("QLabel { color: #c62828; }"));
        m_commandStatus->show();
        process->deleteLater();
        if (m_watcher) m_watcher->pollNow();
        emit commandFinished(arguments, ok, output);
        // Resume prints the id of the run that continues this one: follow it.
        if (ok && arguments.value(0) == QLatin1String("resume"))
            if (const std::optional<qint64> id = RunLauncher::parseRunId(output)) emit runStarted(*id);
        refreshLabels();
    });
    connect(process, &QProcess::errorOccurred, this, [this, process, arguments, what](QProcess::ProcessError error) {
        if (error != QProcess::FailedToStart) return;
        const QString message = tr("cannot start %1 (%2): %3. It is expected beside the console; "
                                   "build the parallax-cli target.")
                                    .arg(m_cli, what, process->errorString());
        m_commandStatus->setText(message);
        m_commandStatus->setStyleSheet(QStringLiteral("QLabel { color: #c62828; }"));
        m_commandStatus->show();
        process->deleteLater();
        emit commandFinished(arguments, false, message);
        refreshLabels();
    });
    m_commandStatus->setText(tr("%1 ...").arg(what));
    m_commandStatus->setStyleSheet(QString());
    m_commandStatus->show();
    process->start();
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
