#include "ui/pages/LogsPage.h"
#include "ui/widgets/TableExport.h"

#include "core/store/StoreTypes.h"
#include "ui/models/LogTableModel.h"
#include "ui/models/StoreWatcher.h"

#include <QPainter>
#include <QCheckBox>
#include <QComboBox>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>
#include <QScrollBar>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>

#include <algorithm>

namespace parallax {

namespace {
constexpr int kRankRole = Qt::UserRole + 1;
} // namespace

LogsPage::LogsPage(StoreWatcher* watcher, QWidget* parent) : QWidget(parent), m_watcher(watcher) {
    m_model = new LogTableModel(watcher, this);
    buildUi();
    m_searchDelay.setSingleShot(true);
    m_searchDelay.setInterval(kSearchDelayMs);
    connect(&m_searchDelay, &QTimer::timeout, this, &LogsPage::applyQuery);

    connect(m_model, &LogTableModel::countChanged, this, [this](int rows) {
        m_status->setStyleSheet(QString());
        m_status->setText(tr("%n line(s)", nullptr, rows));
        if (m_follow) onRowsInserted();
    });
    connect(m_model, &LogTableModel::queryFailed, this, [this](const QString& message) {
        m_status->setStyleSheet(QStringLiteral("QLabel { color: #c62828; }"));
        m_status->setText(message);
    });
    connect(m_model, &QAbstractItemModel::rowsInserted, this, &LogsPage::onRowsInserted);
    connect(m_model, &QAbstractItemModel::modelAboutToBeReset, this, [this] { m_autoScrolling = true; });
    connect(m_model, &QAbstractItemModel::modelReset, this, [this] { m_autoScrolling = false; });
    connect(m_model, &LogTableModel::firstFound, this, &LogsPage::onFirstFound);
    connect(m_model, &LogTableModel::runRecordChanged, this, &LogsPage::updateTitle);
    connect(m_model, &LogTableModel::pageLoaded, this, [this](int first, int last) {
        if (m_pendingJump >= first && m_pendingJump <= last) {
            m_view->selectRow(m_pendingJump);
            m_pendingJump = -1;
        }
    });
    if (m_watcher) {
        connect(m_watcher, &StoreWatcher::runChanged, this, [this](const RunRecord& r) {
            if (r.id == m_run) setRanks(r.world_size, {});
        });
        connect(m_watcher, &StoreWatcher::runStartLoaded, this, [this](qint64 run, const RunStartEvent& s) {
            if (run == m_run) setRanks(s.world, s.hosts);
        });
    }
}

LogsPage::~LogsPage() = default;

void LogsPage::buildUi() {
    auto* root = new QVBoxLayout(this);
    m_title = new QLabel(this);
    m_title->setTextInteractionFlags(Qt::TextSelectableByMouse);
    QFont titleFont = m_title->font();
    titleFont.setBold(true);
    m_title->setFont(titleFont);
    root->addWidget(m_title);
    updateTitle();
    auto* bar = new QHBoxLayout;
    m_level = new QComboBox(this);
    m_level->addItem(tr("All levels"), QString());
    m_level->addItem(tr("Info and above"), QStringLiteral("info"));
    m_level->addItem(tr("Warnings and errors"), QStringLiteral("warn"));
    m_level->addItem(tr("Errors"), QStringLiteral("error"));
    connect(m_level, qOverload<int>(&QComboBox::currentIndexChanged), this, &LogsPage::applyQuery);
    m_search = new QLineEdit(this);
    m_search->setClearButtonEnabled(true);
    m_search->setPlaceholderText(tr("Search: words, nccl* (prefix), \"out of memory\" OR oom"));
    connect(m_search, &QLineEdit::textEdited, this, [this] { m_searchDelay.start(); });
    connect(m_search, &QLineEdit::returnPressed, this, &LogsPage::applyQuery);
    m_followBox = new QCheckBox(tr("Follow"), this);
    m_followBox->setChecked(m_follow);
    m_followBox->setToolTip(tr("Keep the newest line in view; scrolling up pauses it, scrolling to the end resumes it"));
    connect(m_followBox, &QCheckBox::toggled, this, &LogsPage::setFollow);
    m_firstError = new QPushButton(tr("First error"), this);
    connect(m_firstError, &QPushButton::clicked, this, &LogsPage::jumpToFirstError);
    m_status = new QLabel(this);
    bar->addWidget(m_level);
    bar->addWidget(m_search, 1);
    bar->addWidget(m_followBox);
    bar->addWidget(m_firstError);
    bar->addWidget(m_status);
    root->addLayout(bar);

    auto* splitter = new QSplitter(Qt::Horizontal, this);
    m_ranks = new QListWidget(splitter);
    m_ranks->setToolTip(tr("Check ranks to show only theirs; none checked shows every rank"));
    connect(m_ranks, &QListWidget::itemChanged, this, [this] {
        if (!m_settingRanks) applyQuery();
    });
    m_view = new QTableView(splitter);
    m_view->setModel(m_model);
    TableExport::install(m_view, QStringLiteral("logs"));
    m_view->setWordWrap(false);
    m_view->setShowGrid(false);
    m_view->setAlternatingRowColors(true);
    m_view->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_view->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    // Fixed row heights: with a million rows the view must never ask each row for its size.
    QHeaderView* rows = m_view->verticalHeader();
    rows->setSectionResizeMode(QHeaderView::Fixed);
    rows->setDefaultSectionSize(QFontMetrics(m_view->font()).height() + 4);
    rows->hide();
    QHeaderView* columns = m_view->horizontalHeader();
    columns->setStretchLastSection(true);
    const int ch = QFontMetrics(m_view->font()).horizontalAdvance(QLatin1Char('0'));
    m_view->setColumnWidth(LogTableModel::TimeColumn, ch * 14);
    m_view->setColumnWidth(LogTableModel::HostColumn, ch * 14);
    m_view->setColumnWidth(LogTableModel::RankColumn, ch * 6);
    m_view->setColumnWidth(LogTableModel::LevelColumn, ch * 7);
    connect(m_view->verticalScrollBar(), &QScrollBar::valueChanged, this, &LogsPage::onScrolled);
    splitter->addWidget(m_ranks);
    splitter->addWidget(m_view);
    splitter->setStretchFactor(0, 0);
    splitter->setStretchFactor(1, 1);
    splitter->setSizes({160, 800});
    root->addWidget(splitter, 1);
}

void LogsPage::setRun(qint64 run) {
    if (run == m_run) return;
    m_run = run;
    m_settingRanks = true;
    m_ranks->clear();
    m_settingRanks = false;
    m_pendingJump = -1;
    m_status->clear();
    // The filter of one run's ranks means nothing for another.
    LogQuery q = m_model->query();
    q.ranks.clear();
    m_model->setQuery(q);
    m_model->setRun(run);
    updateTitle();
}

void LogsPage::updateTitle() {
    if (m_run <= 0) {
        m_title->setText(tr("No run chosen: open one on the Runs or Live page"));
        return;
    }
    const std::optional<RunRecord>& r = m_model->runRecord();
    if (!r) {
        m_title->setText(tr("Logs of run #%1").arg(m_run));
        return;
    }
    QString text = tr("Logs of run #%1").arg(r->id);
    if (!r->name.empty()) text += QChar(' ') + QString::fromStdString(r->name);
    text += QStringLiteral(" (%1)").arg(QString::fromStdString(runStateName(r->state)));
    m_title->setText(text);
    m_title->setToolTip(r->exit_reason.empty() ? QString() : QString::fromStdString(r->exit_reason));
}

void LogsPage::setRanks(int worldSize, const std::vector<std::string>& hosts) {
    worldSize = std::max(worldSize, static_cast<int>(hosts.size()));
    const std::vector<int> checked = rankFilter();
    m_settingRanks = true;
    // Row 0 is the supervisor and launcher (rank -1), then one row per rank.
    while (m_ranks->count() > worldSize + 1) delete m_ranks->takeItem(m_ranks->count() - 1);
    for (int r = -1; r < worldSize; ++r) {
        const int row = r + 1;
        QListWidgetItem* item = row < m_ranks->count() ? m_ranks->item(row) : nullptr;
        if (!item) {
            item = new QListWidgetItem(m_ranks);
            item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsUserCheckable);
            item->setData(kRankRole, r);
            item->setCheckState(std::find(checked.begin(), checked.end(), r) != checked.end() ? Qt::Checked
                                                                                              : Qt::Unchecked);
        }
        QString text = r < 0 ? tr("supervisor") : tr("rank %1").arg(r);
        if (r >= 0 && static_cast<size_t>(r) < hosts.size()) {
            text += QStringLiteral(" · ") + QString::fromStdString(hosts[static_cast<size_t>(r)]);
        } else if (r >= 0 && item->text().contains(QStringLiteral(" · "))) {
            text = item->text(); // keep the host learnt from run_start
        }
        item->setText(text);
    }
    m_settingRanks = false;
}

std::vector<int> LogsPage::rankFilter() const { return m_model->query().ranks; }

void LogsPage::setRankFilter(const std::vector<int>& ranks) {
    m_settingRanks = true;
    for (int i = 0; i < m_ranks->count(); ++i) {
        QListWidgetItem* item = m_ranks->item(i);
        const int r = item->data(kRankRole).toInt();
        item->setCheckState(std::find(ranks.begin(), ranks.end(), r) != ranks.end() ? Qt::Checked : Qt::Unchecked);
    }
    m_settingRanks = false;
    // Ranks not listed yet (run_start not read) still filter.
    LogQuery q = m_model->query();
    q.ranks = ranks;
    m_model->setQuery(q);
}

void LogsPage::showRankWithSupervisor(int rank) {
    m_level->setCurrentIndex(0); // all levels
    setRankFilter({-1, rank});
}

void LogsPage::setMinLevel(const QString& level) {
    const int i = m_level->findData(level);
    m_level->setCurrentIndex(i < 0 ? 0 : i);
    applyQuery();
}

void LogsPage::setSearchText(const QString& text) {
    m_search->setText(text);
    applyQuery();
}

void LogsPage::applyQuery() {
    m_searchDelay.stop();
    LogQuery q;
    for (int i = 0; i < m_ranks->count(); ++i) {
        const QListWidgetItem* item = m_ranks->item(i);
        if (item->checkState() == Qt::Checked) q.ranks.push_back(item->data(kRankRole).toInt());
    }
    // Ranks filtered before the list knew them stay filtered.
    if (q.ranks.empty() && m_ranks->count() == 0) q.ranks = m_model->query().ranks;
    q.min_level = m_level->currentData().toString().toStdString();
    q.match = m_search->text().trimmed().toStdString();
    m_pendingJump = -1;
    m_model->setQuery(q);
}

void LogsPage::setFollow(bool on) {
    if (on == m_follow) return;
    m_follow = on;
    {
        const QSignalBlocker block(m_followBox);
        m_followBox->setChecked(on);
    }
    if (on) onRowsInserted();
    emit followChanged(on);
}

void LogsPage::onRowsInserted() {
    if (!m_follow) return;
    m_autoScrolling = true;
    m_view->scrollToBottom();
    m_autoScrolling = false;
}

void LogsPage::onScrolled(int value) {
    if (m_autoScrolling) return;
    const QScrollBar* bar = m_view->verticalScrollBar();
    if (bar->maximum() <= 0) return;
    // Scrolling up pauses following; reaching the end again resumes it.
    setFollow(value >= bar->maximum());
}

void LogsPage::jumpToFirstError() {
    setFollow(false);
    m_model->findFirst(QStringLiteral("error"));
}

void LogsPage::onFirstFound(int row) {
    if (row < 0) {
        m_status->setStyleSheet(QString());
        m_status->setText(tr("No error under the current filter"));
        return;
    }
    setFollow(false);
    const QModelIndex index = m_model->index(row, LogTableModel::MessageColumn);
    m_autoScrolling = true;
    m_view->scrollTo(index, QAbstractItemView::PositionAtCenter);
    m_autoScrolling = false;
    if (m_model->isLoaded(row)) {
        m_view->selectRow(row);
    } else {
        m_pendingJump = row;
    }
}

void LogsPage::paintIcon(QPainter& p, const QColor&) {
    for (const auto& [y, w] : {std::pair{5.0, 17.0}, {10.0, 12.0}, {15.0, 17.0}, {20.0, 9.0}})
        p.drawLine(QPointF(4, y), QPointF(4 + w, y));
}

} // namespace parallax
