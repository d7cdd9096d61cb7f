#include "ui/pages/PipelinePage.h"
#include "ui/widgets/TableExport.h"

#include "core/spec/ScheduleInfo.h"
#include "core/store/StoreTypes.h"
#include "ui/models/PipelineRunModel.h"
#include "ui/models/SpanModel.h"
#include "ui/plots/CurvePlot.h"
#include "ui/plots/PipelineTimeline.h"

#include <QPainter>
#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>

#include <algorithm>
#include <utility>

namespace parallax {

namespace {

bool sameSchedule(const std::optional<SpanModel::Schedule>& a, const std::optional<SpanModel::Schedule>& b) {
    if (a.has_value() != b.has_value()) return false;
    if (!a) return true;
    return a->stages == b->stages && a->microbatches == b->microbatches && a->virtualStages == b->virtualStages &&
           a->kind == b->kind;
}

} // namespace

PipelinePage::PipelinePage(StoreWatcher* watcher, QWidget* parent)
    : QWidget(parent), m_runModel(new PipelineRunModel(watcher, this)) {
    m_model = new SpanModel(this);
    buildUi();
    connect(m_runModel, &PipelineRunModel::stepsRead, this, &PipelinePage::applySteps);
    connect(m_runModel, &PipelineRunModel::spansRead, this, &PipelinePage::applySpans);
    connect(m_runModel, &PipelineRunModel::bubblesRead, m_bubblePlot, &CurvePlot::dataChanged);
    connect(m_runModel, &PipelineRunModel::stepsFailed, this, [this](const QString& message) {
        m_summary->setText(tr("Could not read the run's sampled steps: %1").arg(message));
    });
    connect(m_runModel, &PipelineRunModel::spansFailed, this, [this](const QString& message) {
        m_summary->setText(tr("Could not read the step's spans: %1").arg(message));
    });
    updateNavigation();
    updateSummary();
}

PipelinePage::~PipelinePage() = default;

void PipelinePage::buildUi() {
    auto* root = new QVBoxLayout(this);

    m_header = new QLabel(this);
    m_header->setTextFormat(Qt::RichText);
    m_header->setWordWrap(true);
    root->addWidget(m_header);

    root->addLayout(buildControls());

    m_problems = new QLabel(this);
    m_problems->setWordWrap(true);
    m_problems->setStyleSheet(QStringLiteral(
        "QLabel { background: #fff3e0; color: #e65100; border: 1px solid #ffb74d; padding: 4px; }"));
    m_problems->hide();
    root->addWidget(m_problems);

    root->addWidget(buildPanes(), 1);

    connect(m_previous, &QPushButton::clicked, this, &PipelinePage::showPreviousStep);
    connect(m_next, &QPushButton::clicked, this, &PipelinePage::showNextStep);
    connect(m_newest, &QPushButton::clicked, this, &PipelinePage::showNewestStep);
    connect(m_followBox, &QCheckBox::toggled, this, &PipelinePage::setFollowNewest);
    connect(m_allRanks, &QCheckBox::toggled, m_timeline, &PipelineTimeline::setShowAllRanks);
    connect(m_resetZoom, &QPushButton::clicked, m_timeline, &PipelineTimeline::resetView);
    connect(m_stepBox, qOverload<int>(&QComboBox::activated), this, [this](int index) {
        if (index >= 0 && index < int(m_steps.size())) {
            if (index != int(m_steps.size()) - 1) setFollowNewest(false);
            setStep(m_steps[size_t(index)]);
        }
    });
}

// The step controls above the timeline.
QHBoxLayout* PipelinePage::buildControls() {
    auto* controls = new QHBoxLayout;
    m_previous = new QPushButton(tr("◀ Previous"), this);
    m_previous->setToolTip(tr("The sampled step before this one (Page Up)"));
    m_previous->setShortcut(QKeySequence(Qt::Key_PageUp));
    m_stepBox = new QComboBox(this);
    m_stepBox->setMinimumContentsLength(12);
    m_stepBox->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_stepBox->setToolTip(tr("Steps whose pipeline spans were recorded (every telemetry.span_every steps)"));
    m_next = new QPushButton(tr("Next ▶"), this);
    m_next->setToolTip(tr("The sampled step after this one (Page Down)"));
    m_next->setShortcut(QKeySequence(Qt::Key_PageDown));
    m_newest = new QPushButton(tr("Newest"), this);
    m_newest->setToolTip(tr("The newest sampled step"));
    m_followBox = new QCheckBox(tr("Follow newest"), this);
    m_followBox->setChecked(m_follow);
    m_followBox->setToolTip(tr("Show each newly sampled step as the run records it"));
    m_allRanks = new QCheckBox(tr("Every rank"), this);
    m_allRanks->setChecked(true);
    m_allRanks->setToolTip(tr("A row per rank of each stage (tensor- and data-parallel replicas); "
                              "off: the first rank of each stage"));
    m_allRanks->hide();
    m_resetZoom = new QPushButton(tr("Whole step"), this);
    m_resetZoom->setToolTip(tr("Show the whole step again (or double-click the timeline)"));
    controls->addWidget(new QLabel(tr("Step"), this));
    controls->addWidget(m_previous);
    controls->addWidget(m_stepBox);
    controls->addWidget(m_next);
    controls->addWidget(m_newest);
    controls->addWidget(m_followBox);
    controls->addSpacing(12);
    controls->addWidget(m_allRanks);
    controls->addStretch(1);
    auto* hint = new QLabel(tr("wheel: zoom · drag: pan · double-click: whole step"), this);
    hint->setEnabled(false);
    // A hint, not a reason for the window to be wider.
    hint->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    hint->setMinimumWidth(0);
    controls->addWidget(hint);
    controls->addWidget(m_resetZoom);
    return controls;
}

// The timeline over the bubble summary, table and chart.
QSplitter* PipelinePage::buildPanes() {
    m_splitter = new QSplitter(Qt::Vertical, this);
    m_timeline = new PipelineTimeline(m_splitter);
    m_timeline->setPlaceholderText(tr("Choose a run on the Runs page to see its pipeline"));
    m_lower = new QWidget(m_splitter);
    auto* lowerLayout = new QVBoxLayout(m_lower);
    lowerLayout->setContentsMargins(0, 0, 0, 0);
    buildBubblePane(m_lower, lowerLayout);
    m_splitter->addWidget(m_timeline);
    m_splitter->addWidget(m_lower);
    m_splitter->setStretchFactor(0, 3);
    m_splitter->setStretchFactor(1, 2);
    m_splitter->setCollapsible(0, false);
    return m_splitter;
}

// The bubble summary, table and chart of the lower pane.
void PipelinePage::buildBubblePane(QWidget* lower, QVBoxLayout* lowerLayout) {
    m_summary = new QLabel(lower);
    m_summary->setWordWrap(true);
    m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    lowerLayout->addWidget(m_summary);
    m_table = new QTableView(lower);
    m_table->setModel(m_model);
    TableExport::install(m_table, QStringLiteral("pipeline-bubbles"));
    m_table->verticalHeader()->hide();
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setAlternatingRowColors(true);
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_table->horizontalHeader()->setStretchLastSection(false);
    auto* tableAndChart = new QSplitter(Qt::Horizontal, lower);
    tableAndChart->addWidget(m_table);
    m_bubblePlot = new CurvePlot(tableAndChart);
    // No title: the lower pane is short, the axis and the legend say what it is.
    m_bubblePlot->setValueLabel(tr("bubble (%)"));
    m_bubblePlot->setLegendVisible(true);
    m_bubblePlot->exporter()->setBaseName(QStringLiteral("pipeline-bubble"));
    m_bubblePlot->addCurve(tr("measured bubble"), m_runModel->bubbleHistory().measured(), MetricChannel::Raw, QColor(0xc6, 0x28, 0x28), 1.8);
    m_theoryCurve = m_bubblePlot->addCurve(tr("theoretical"), m_runModel->bubbleHistory().theory(), MetricChannel::Raw,
                                           QColor(0x42, 0x42, 0x42), 1.5);
    m_bubblePlot->setCurvePenStyle(m_theoryCurve, Qt::DashLine);
    m_bubblePlot->setCurveVisible(m_theoryCurve, false);
    tableAndChart->addWidget(m_bubblePlot);
    // A click on the chart shows the sampled step nearest to it.
    connect(m_bubblePlot, &CurvePlot::clicked, this, [this](double x) {
        if (m_steps.empty()) return;
        auto it = std::lower_bound(m_steps.begin(), m_steps.end(), x);
        if (it == m_steps.end() || (it != m_steps.begin() && x - double(*std::prev(it)) < double(*it) - x)) --it;
        if (std::next(it) != m_steps.end()) setFollowNewest(false);
        setStep(*it);
    });
    tableAndChart->setStretchFactor(0, 1);
    tableAndChart->setStretchFactor(1, 1);
    tableAndChart->setChildrenCollapsible(false);
    lowerLayout->addWidget(tableAndChart, 1);
}

void PipelinePage::setRun(qint64 run) {
    if (run == m_runModel->run()) return;
    // Reading starts here; its answers come back queued, after the reset below.
    m_runModel->setRun(run);
    m_steps.clear();
    m_wantedStep.reset();
    m_shownStep.reset();
    m_runTitle.clear();
    m_layoutText.clear();
    m_stepBox->clear();
    m_model->setSchedule(std::nullopt);
    m_model->clear();
    m_timeline->clear();
    m_bubblePlot->setCurveVisible(m_theoryCurve, false);
    m_bubblePlot->resetView();
    m_timeline->setPlaceholderText(run > 0 ? tr("Reading the run's pipeline spans…")
                                           : tr("Choose a run on the Runs page to see its pipeline"));
    updateNavigation();
    updateSummary();
    emit stepsChanged();
}

qint64 PipelinePage::run() const { return m_runModel->run(); }

void PipelinePage::setInView(bool on) { m_runModel->setActive(on); }

bool PipelinePage::isLoading() const { return m_runModel->isLoading(); }

const BubbleHistory& PipelinePage::bubbleHistory() const { return m_runModel->bubbleHistory(); }

void PipelinePage::refreshSteps() { m_runModel->refreshSteps(); }

void PipelinePage::applySteps() {
    const PipelineRunModel::RunSteps& r = m_runModel->runSteps();
    if (!r.record) {
        m_runTitle = tr("Run %1 is not in this store").arg(m_runModel->run());
        m_timeline->setPlaceholderText(m_runTitle);
        updateSummary();
        return;
    }
    const RunRecord& record = *r.record;
    m_runTitle = tr("Run #%1 %2").arg(record.id).arg(QString::fromStdString(record.name));

    if (!sameSchedule(r.schedule, m_model->schedule()) || !m_model->schedule()) m_model->setSchedule(r.schedule, r.scheduleWhy);
    m_runModel->setTheoreticalBubble(m_model->theoretical());
    m_bubblePlot->setCurveVisible(m_theoryCurve, m_model->theoretical().has_value());
    m_bubblePlot->dataChanged();
    QStringList layout;
    layout << QString::fromStdString(runStateName(record.state));
    if (r.schedule) {
        layout << tr("pp %1").arg(r.schedule->stages) << QString::fromStdString(r.schedule->kind.name());
        if (runsModelChunks(r.schedule->kind, r.schedule->virtualStages)) layout << tr("v %1").arg(r.schedule->virtualStages);
        layout << (r.schedule->microbatches == 1   ? tr("1 micro-batch per step")
                   : r.schedule->microbatches > 1  ? tr("%1 micro-batches per step").arg(r.schedule->microbatches)
                                                   : tr("micro-batches per step not integral"));
        layout << tr("dp %1").arg(r.dp) << tr("tp %1").arg(r.tp);
        if (r.spanEvery == 1) layout << tr("spans every step");
        else if (r.spanEvery > 1) layout << tr("spans every %1 steps").arg(r.spanEvery);
    }
    if (!r.stageSplit.isEmpty()) layout << r.stageSplit;
    m_layoutText = layout.join(QStringLiteral(" · "));

    const std::vector<int64_t>& steps = r.steps;
    const bool changed = steps != m_steps;
    if (changed) {
        const bool extends = steps.size() >= m_steps.size() && std::equal(m_steps.begin(), m_steps.end(), steps.begin());
        if (!extends) m_stepBox->clear();
        for (size_t i = extends ? m_steps.size() : 0; i < steps.size(); ++i)
            m_stepBox->addItem(tr("step %1").arg(steps[i]), QVariant::fromValue<qlonglong>(steps[i]));
        m_steps = steps;
    }

    // One stage is no pipeline: its ranks' forwards and backwards follow each other with no bubble
    // to measure, and a timeline of them would read as a schedule.
    const bool onePipelineStage = r.schedule && r.schedule->stages <= 1;
    // Nor are its bubbles: what a single stage's spans leave idle is not a pipeline's bubble.
    m_lower->setVisible(!onePipelineStage);
    if (m_steps.empty() || onePipelineStage) {
        QString why;
        if (onePipelineStage)
            why = tr("This run has no pipeline (parallel.pp = 1): one stage, no bubble to measure. The Live page "
                     "shows each rank's compute and waiting.");
        else if (r.spanEvery == 0)
            why = tr("This run records no pipeline spans (telemetry.span_every = 0).");
        else if (!r.ended)
            why = r.spanEvery > 1    ? tr("No sampled step yet: spans are recorded every %1 steps.").arg(r.spanEvery)
                  : r.spanEvery == 1 ? tr("No sampled step yet: spans are recorded every step.")
                                     : tr("No sampled step yet.");
        else
            why = tr("This run recorded no pipeline spans.");
        m_timeline->setPlaceholderText(why);
        m_model->clear();
        m_timeline->clear();
        m_wantedStep.reset();
        m_shownStep.reset();
    } else {
        std::optional<int64_t> want = m_wantedStep;
        if (m_follow || !want) want = m_steps.back();
        else if (!std::binary_search(m_steps.begin(), m_steps.end(), *want)) want = m_steps.back();
        if (want != m_wantedStep) {
            m_wantedStep = want;
            m_runModel->requestSpans(*want);
        }
    }
    updateNavigation();
    updateSummary();
    if (changed) emit stepsChanged();
}

void PipelinePage::setStep(int64_t step) {
    if (m_steps.empty()) return;
    auto it = std::upper_bound(m_steps.begin(), m_steps.end(), step);
    const int64_t chosen = it == m_steps.begin() ? m_steps.front() : *std::prev(it);
    if (m_wantedStep == chosen) return;
    m_wantedStep = chosen;
    updateNavigation();
    m_runModel->requestSpans(chosen);
}

void PipelinePage::showPreviousStep() {
    if (!m_wantedStep) return;
    auto it = std::lower_bound(m_steps.begin(), m_steps.end(), *m_wantedStep);
    if (it == m_steps.begin()) return;
    setFollowNewest(false);
    setStep(*std::prev(it));
}

void PipelinePage::showNextStep() {
    if (!m_wantedStep) return;
    auto it = std::upper_bound(m_steps.begin(), m_steps.end(), *m_wantedStep);
    if (it == m_steps.end()) return;
    if (std::next(it) != m_steps.end()) setFollowNewest(false);
    setStep(*it);
}

void PipelinePage::showNewestStep() {
    if (!m_steps.empty()) setStep(m_steps.back());
}

void PipelinePage::setFollowNewest(bool on) {
    if (on == m_follow) return;
    m_follow = on;
    m_followBox->setChecked(on);
    if (on) showNewestStep();
}

void PipelinePage::applySpans(qint64 step) {
    // A step no longer wished for (the run's steps went away meanwhile).
    if (!m_wantedStep || step != *m_wantedStep) return;
    const bool keepView = m_shownStep.has_value();
    m_timeline->setPlaceholderText(tr("Step %1 has no forward, backward or communication spans").arg(step));
    m_timeline->setSpans(m_runModel->spans(), keepView);
    m_model->setSpans(step, m_runModel->spans());
    m_shownStep = step;
    m_allRanks->setVisible(m_timeline->stageCount() > 0 && m_model->bubbles().rankCount() > m_timeline->stageCount());
    updateNavigation();
    updateSummary();
    emit stepShown(step);
}

void PipelinePage::updateNavigation() {
    int index = -1;
    if (m_wantedStep) {
        auto it = std::lower_bound(m_steps.begin(), m_steps.end(), *m_wantedStep);
        if (it != m_steps.end() && *it == *m_wantedStep) index = int(it - m_steps.begin());
    }
    {
        const QSignalBlocker block(m_stepBox);
        m_stepBox->setCurrentIndex(index);
    }
    m_stepBox->setEnabled(!m_steps.empty());
    m_previous->setEnabled(index > 0);
    m_next->setEnabled(index >= 0 && index + 1 < int(m_steps.size()));
    m_newest->setEnabled(!m_steps.empty() && index + 1 < int(m_steps.size()));
}

QString PipelinePage::headerText() const { return m_header->text(); }
QString PipelinePage::summaryText() const { return m_summary->text(); }
QString PipelinePage::problemsText() const { return m_problems->isHidden() ? QString() : m_problems->text(); }

void PipelinePage::updateSummary() {
    const qint64 run = m_runModel->run();
    if (run <= 0) {
        m_header->setText(tr("<b>Pipeline</b> · no run chosen"));
    } else {
        const QString title = m_runTitle.isEmpty() ? tr("Run #%1").arg(run) : m_runTitle;
        m_header->setText(QStringLiteral("<b>%1</b>%2").arg(
            title.toHtmlEscaped(), m_layoutText.isEmpty() ? QString() : QStringLiteral(" · ") + m_layoutText.toHtmlEscaped()));
    }

    const PipelineBubbles& b = m_model->bubbles();
    if (!m_shownStep || b.empty()) {
        m_summary->setText(run > 0 && m_steps.empty() && !isLoading() ? m_timeline->placeholderText() : QString());
    } else {
        QString text = tr("Step %1 · window %2 ms · measured bubble %3")
                           .arg(*m_shownStep)
                           .arg(b.window() * 1e3, 0, 'f', 2)
                           .arg(SpanModel::percent(b.overall));
        if (const std::optional<double> t = m_model->theoretical())
            text += tr(" · theoretical %1 (%2 pp)")
                        .arg(SpanModel::percent(*t))
                        .arg(QStringLiteral("%1%2").arg(b.overall >= *t ? QStringLiteral("+") : QString())
                                 .arg((b.overall - *t) * 100.0, 0, 'f', 1));
        else
            text += tr(" · theoretical not known: %1").arg(m_model->theoreticalNote());
        m_summary->setText(text);
    }

    QStringList problems;
    const std::optional<SpanModel::Schedule>& schedule = m_model->schedule();
    if (m_shownStep && !b.empty() && schedule && int64_t(b.stages.size()) != schedule->stages)
        problems << tr("The spans show %1 stages, but the run's spec has parallel.pp = %2.")
                        .arg(b.stages.size())
                        .arg(schedule->stages);
    const std::vector<std::string>& order = m_model->orderProblems();
    if (!order.empty()) {
        QStringList first;
        for (size_t i = 0; i < order.size() && i < 3; ++i) first << QString::fromStdString(order[i]);
        QString line = (order.size() == 1 ? tr("The recorded order is not the schedule's: ")
                                          : tr("The recorded order is not the schedule's (%1 problems): ").arg(order.size())) +
                       first.join(QStringLiteral("; "));
        if (order.size() > 3) line += tr("; and %1 more").arg(order.size() - 3);
        problems << line;
    }
    m_problems->setText(problems.join(QChar('\n')));
    m_problems->setVisible(!problems.isEmpty());
}

void PipelinePage::paintIcon(QPainter& p, const QColor&) {
    for (int s = 0; s < 3; ++s) p.drawLine(QPointF(3 + 4 * s, 6 + 6 * s), QPointF(12 + 4 * s, 6 + 6 * s));
}

} // namespace parallax
