#include "ui/pages/ComparePage.h"
#include "ui/widgets/TableExport.h"

#include "ui/models/CompareRunsModel.h"
#include "ui/models/RunCheckModel.h"
#include "ui/models/RunFilterModel.h"
#include "ui/models/RunListModel.h"
#include "ui/models/SpecDiffModel.h"
#include "ui/models/SummaryModel.h"
#include "ui/pages/CompareSamplesPanel.h"
#include "ui/plots/CurvePlot.h"
#include "ui/plots/SmoothingBox.h"

#include <QPainter>
#include <QPainterPath>
#include <QCheckBox>
#include <QComboBox>
#include <QDateTime>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QSplitter>
#include <QTabWidget>
#include <QTableView>
#include <QVBoxLayout>

namespace parallax {

namespace {

QTableView* makeTable(QWidget* parent) {
    auto* view = new QTableView(parent);
    view->setEditTriggers(QAbstractItemView::NoEditTriggers);
    TableExport::install(view, QStringLiteral("comparison"));
    view->setSelectionMode(QAbstractItemView::ContiguousSelection);
    view->setWordWrap(false);
    // A handful of rows and one column per run, sharing the width: a run's column must not end
    // past the edge of a 1280-pixel window (a cell too long elides, its tooltip has it whole).
    view->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    // A run's title too, keeping its number and the end of its name ("#2 quicks…zero1").
    view->horizontalHeader()->setTextElideMode(Qt::ElideMiddle);
    view->verticalHeader()->setDefaultSectionSize(view->fontMetrics().height() + 6);
    return view;
}

} // namespace

ComparePage::ComparePage(RunListModel* runs, StoreWatcher* watcher, QWidget* parent)
    : QWidget(parent), m_runs(runs), m_compareRuns(new CompareRunsModel(watcher, this)),
      m_filter(new RunFilterModel(this)), m_check(new RunCheckModel(this)), m_diff(new SpecDiffModel(this)),
      m_summary(new SummaryModel(this)) {
    m_filter->setSourceModel(m_runs);
    m_check->setSourceModel(m_filter);
    m_reload.setSingleShot(true);
    connect(&m_reload, &QTimer::timeout, this, &ComparePage::reload);
    connect(m_compareRuns, &CompareRunsModel::loaded, this, &ComparePage::apply);
    connect(m_compareRuns, &CompareRunsModel::failed, this,
            [this](const QString& message) { m_status->setText(tr("Could not read the runs: %1").arg(message)); });

    auto* layout = new QVBoxLayout(this);
    m_mainSplitter = new QSplitter(Qt::Horizontal, this);

    // Left: the runs to pick from.
    m_mainSplitter->addWidget(buildPickPanel());

    // Right: curves above, differences and figures below.
    m_rightSplitter = new QSplitter(Qt::Vertical, m_mainSplitter);
    m_rightSplitter->addWidget(buildCurveTabs(watcher));
    QSplitter* tables = buildTables();
    m_rightSplitter->addWidget(tables);
    m_rightSplitter->setStretchFactor(0, 3);
    m_rightSplitter->setStretchFactor(1, 2);
    m_mainSplitter->addWidget(m_rightSplitter);
    m_mainSplitter->setStretchFactor(0, 1);
    m_mainSplitter->setStretchFactor(1, 3);
    m_mainSplitter->setSizes({320, 1000});
    m_rightSplitter->setSizes({500, 330});
    tables->setSizes({500, 500});
    layout->addWidget(m_mainSplitter);

    connect(m_filterEdit, &QLineEdit::textChanged, m_filter, &RunFilterModel::setFilterText);
    connect(m_check, &RunCheckModel::checkedChanged, this, [this] { scheduleReload(150); });
    connect(m_pick, &QTableView::doubleClicked, this, [this](const QModelIndex& index) {
        emit openRun(index.data(RunListModel::RunIdRole).toLongLong());
    });
    connect(m_metric, &QComboBox::currentIndexChanged, this, &ComparePage::rebuildCurves);
    connect(m_axis, &QComboBox::currentIndexChanged, this,
            [this] { m_plot->setAxis(MetricAxis(m_axis->currentData().toInt())); });
    connect(m_logScale, &QCheckBox::toggled, m_plot, &CurvePlot::setLogScale);
    connect(m_smoothing, qOverload<int>(&QSpinBox::valueChanged), this, &ComparePage::rebuildCurves);
    connect(m_runs, &QAbstractItemModel::dataChanged, this, &ComparePage::onRunsChanged);
    connect(m_runs, &QAbstractItemModel::modelReset, this, &ComparePage::onRunsChanged);
    connect(m_runs, &QAbstractItemModel::rowsRemoved, this, &ComparePage::onRunsChanged);

    apply();
}

// The runs to pick from: a filter over a checkable list, and what loading them says.
QWidget* ComparePage::buildPickPanel() {
    auto* left = new QWidget(m_mainSplitter);
    auto* leftLayout = new QVBoxLayout(left);
    leftLayout->setContentsMargins(0, 0, 0, 0);
    m_filterEdit = new QLineEdit(left);
    m_filterEdit->setPlaceholderText(tr("Filter runs"));
    m_filterEdit->setClearButtonEnabled(true);
    leftLayout->addWidget(m_filterEdit);
    m_pick = new QTableView(left);
    m_pick->setModel(m_check);
    TableExport::install(m_pick, QStringLiteral("runs"));
    m_pick->setSortingEnabled(true);
    m_pick->sortByColumn(RunListModel::IdColumn, Qt::DescendingOrder);
    m_pick->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_pick->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_pick->verticalHeader()->hide();
    m_pick->verticalHeader()->setDefaultSectionSize(m_pick->fontMetrics().height() + 8);
    // Id, state and name: the name takes what is left, the layouts differ in the table on the right.
    for (int c = 0; c < RunListModel::ColumnCount; ++c)
        m_pick->setColumnHidden(c, c != RunListModel::IdColumn && c != RunListModel::StateColumn &&
                                       c != RunListModel::NameColumn);
    m_pick->horizontalHeader()->setSectionResizeMode(RunListModel::NameColumn, QHeaderView::Stretch);
    m_pick->setColumnWidth(RunListModel::IdColumn, m_pick->fontMetrics().horizontalAdvance(QStringLiteral("M00000")));
    m_pick->setColumnWidth(RunListModel::StateColumn, m_pick->fontMetrics().horizontalAdvance(QStringLiteral("succeededM")));
    m_pick->setColumnWidth(RunListModel::NameColumn, m_pick->fontMetrics().horizontalAdvance(QStringLiteral("M")) * 12);
    leftLayout->addWidget(m_pick, 1);
    m_status = new QLabel(left);
    m_status->setWordWrap(true);
    leftLayout->addWidget(m_status);
    return left;
}

// The curves, and beside them in a tab the images the runs drew while some run compared has any.
QWidget* ComparePage::buildCurveTabs(StoreWatcher* watcher) {
    m_curveTabs = new QTabWidget(m_rightSplitter);
    m_curveTabs->setObjectName(QStringLiteral("compareCurveTabs"));
    m_curveTabs->setTabBarAutoHide(true);
    m_curveTabs->setDocumentMode(true);
    m_curveTabs->addTab(buildPlotPanel(), tr("Curves"));
    m_samples = new CompareSamplesPanel(watcher, m_curveTabs);
    m_samples->hide();
    connect(m_samples, &CompareSamplesPanel::availabilityChanged, this, [this](bool available) {
        const int at = m_curveTabs->indexOf(m_samples);
        if (available && at < 0) m_curveTabs->addTab(m_samples, tr("Samples"));
        else if (!available && at >= 0) m_curveTabs->removeTab(at);
    });
    return m_curveTabs;
}

// The curves of the picked runs with the metric, axis, scale and smoothing they are drawn by.
QWidget* ComparePage::buildPlotPanel() {
    auto* plotBox = new QWidget(m_rightSplitter);
    auto* plotLayout = new QVBoxLayout(plotBox);
    plotLayout->setContentsMargins(0, 0, 0, 0);
    auto* controls = new QHBoxLayout;
    m_metric = new QComboBox(plotBox);
    for (int m = 0; m < int(CompareMetric::Count); ++m) m_metric->addItem(CompareRun::metricName(CompareMetric(m)), m);
    m_axis = new QComboBox(plotBox);
    m_axis->addItem(tr("by step"), int(MetricAxis::Step));
    m_axis->addItem(tr("by wall time since start"), int(MetricAxis::Time));
    m_axis->addItem(tr("by tokens"), int(MetricAxis::Tokens));
    m_logScale = new QCheckBox(tr("Log scale"), plotBox);
    m_smoothing = new SmoothingBox(0, tr("Weight of the exponential moving average drawn over each run's raw "
                                         "curve (0: off), computed on every step"), plotBox);
    controls->addWidget(new QLabel(tr("Plot"), plotBox));
    controls->addWidget(m_metric);
    controls->addWidget(m_axis);
    controls->addWidget(m_logScale);
    controls->addWidget(new QLabel(tr("Smoothing"), plotBox));
    controls->addWidget(m_smoothing);
    controls->addStretch(1);
    plotLayout->addLayout(controls);
    m_plot = new CurvePlot(plotBox);
    m_plot->setLegendVisible(true);
    m_plot->setMinimumHeight(220);
    plotLayout->addWidget(m_plot, 1);
    return plotBox;
}

// The spec fields that differ beside the headline figures.
QSplitter* ComparePage::buildTables() {
    auto* tables = new QSplitter(Qt::Horizontal, m_rightSplitter);
    auto* diffBox = new QGroupBox(tr("Configuration differences"), tables);
    auto* diffLayout = new QVBoxLayout(diffBox);
    m_diffTitle = new QLabel(diffBox);
    m_diffTitle->setWordWrap(true);
    diffLayout->addWidget(m_diffTitle);
    m_diffView = makeTable(diffBox);
    m_diffView->setModel(m_diff);
    diffLayout->addWidget(m_diffView);
    auto* summaryBox = new QGroupBox(tr("Summary"), tables);
    auto* summaryLayout = new QVBoxLayout(summaryBox);
    m_summaryView = makeTable(summaryBox);
    m_summaryView->setModel(m_summary);
    summaryLayout->addWidget(m_summaryView);
    tables->addWidget(diffBox);
    tables->addWidget(summaryBox);
    tables->setStretchFactor(0, 1);
    tables->setStretchFactor(1, 1);
    return tables;
}

void ComparePage::setCheckedRuns(const QList<qint64>& ids) {
    m_check->setCheckedRuns(ids);
}

QList<qint64> ComparePage::checkedRuns() const {
    return m_check->checkedRuns();
}

void ComparePage::setMetric(CompareMetric metric) {
    m_metric->setCurrentIndex(m_metric->findData(int(metric)));
}

void ComparePage::setAxis(MetricAxis axis) {
    m_axis->setCurrentIndex(m_axis->findData(int(axis)));
}

void ComparePage::setSmoothing(int percent) { m_smoothing->setValue(percent); }

int ComparePage::smoothing() const { return m_smoothing->value(); }

QColor ComparePage::runColor(qint64 id) const { return m_colors.color(id); }

void ComparePage::scheduleReload(int delayMs) {
    if (!m_reload.isActive() || m_reload.remainingTime() > delayMs) m_reload.start(delayMs);
}

void ComparePage::onRunsChanged() {
    // Reload when a loaded run moved on (it is still training) or left the store.
    bool stale = false;
    for (const auto& [id, step] : m_loadedSteps) {
        const std::optional<RunRecord> r = m_runs->run(id);
        if (!r || r->last_step != step) stale = true;
    }
    if (stale) scheduleReload(kRefreshMs);
}

const std::vector<CompareRun>& ComparePage::loadedRuns() const { return m_compareRuns->runs(); }

void ComparePage::reload() {
    const QList<qint64> ids = checkedRuns();
    if (!ids.isEmpty() && m_compareRuns->hasStore()) m_status->setText(tr("Reading %n run(s)…", nullptr, int(ids.size())));
    m_compareRuns->load(ids);
}

void ComparePage::apply() {
    const std::vector<CompareRun>& shown = m_compareRuns->runs();
    m_loadedSteps.clear();
    for (const CompareRun& r : shown) m_loadedSteps[r.record.id] = r.record.last_step;
    const double now = double(QDateTime::currentMSecsSinceEpoch()) / 1000.0;
    m_diff->setRuns(shown);
    m_summary->setRuns(shown, now);
    std::vector<std::pair<qint64, QString>> named;
    for (const CompareRun& r : shown) named.emplace_back(r.record.id, r.title());
    m_samples->setRuns(named);

    if (shown.empty()) {
        m_status->setText(tr("Check runs in the list to compare them."));
        m_diffTitle->clear();
    } else {
        m_status->setText(tr("%n run(s) compared.", nullptr, int(shown.size())));
        QStringList unreadable;
        for (const CompareRun& r : shown)
            if (!r.spec) unreadable << tr("%1: %2").arg(r.title(), r.specError);
        QString title;
        if (shown.size() < 2) title = tr("Check a second run to see how the configurations differ.");
        else if (m_diff->rowCount() == 0) title = tr("The runs have the same configuration.");
        else title = tr("%n field(s) differ.", nullptr, m_diff->rowCount());
        if (!unreadable.isEmpty()) title += QChar('\n') + unreadable.join(QChar('\n'));
        m_diffTitle->setText(title);
    }
    rebuildCurves();
    emit loaded();
}

void ComparePage::rebuildCurves() {
    const CompareMetric metric = CompareMetric(m_metric->currentData().toInt());
    m_plot->clearCurves();
    m_plot->setTitle(CompareRun::metricName(metric));
    m_plot->setValueLabel(CompareRun::metricName(metric));
    m_plot->exporter()->setBaseName(CompareRun::metricName(metric));
    std::vector<int64_t> ids;
    const std::vector<CompareRun>& shown = m_compareRuns->runs();
    for (const CompareRun& r : shown) ids.push_back(r.record.id);
    // By run, not by place in the list: checking another run must not repaint the others.
    const std::vector<QColor> colors = m_colors.assign(ids);
    const MetricSmoothing smoothing = m_smoothing->smoothing();
    for (size_t i = 0; i < shown.size(); ++i) {
        const std::shared_ptr<MetricSeries>& series = shown[i].series[size_t(metric)];
        if (series->smoothing() != smoothing) series->setSmoothing(smoothing);
        if (smoothing.kind == MetricSmoothing::Kind::None) {
            m_plot->addCurve(shown[i].title(), series, MetricChannel::Raw, colors[i]);
            continue;
        }
        // The raw curve faint under the smoothed one, as on the Live page.
        QColor faint = colors[i];
        faint.setAlpha(70);
        m_plot->addCurve(tr("%1 (raw)").arg(shown[i].title()), series, MetricChannel::Raw, faint, 1.0, false);
        m_plot->addCurve(shown[i].title(), series, MetricChannel::Smoothed, colors[i], 2.0);
    }
    m_plot->resetView();
    m_plot->dataChanged();
}

void ComparePage::paintIcon(QPainter& p, const QColor&) {
    QPainterPath a(QPointF(2.5, 19));
    a.cubicTo(QPointF(7, 6), QPointF(13, 5), QPointF(21.5, 4.5));
    p.drawPath(a);
    QPen dashed = p.pen();
    dashed.setDashPattern({1.5, 1.8});
    p.setPen(dashed);
    QPainterPath b(QPointF(2.5, 21));
    b.cubicTo(QPointF(9, 16), QPointF(14, 11), QPointF(21.5, 10));
    p.drawPath(b);
}

} // namespace parallax
