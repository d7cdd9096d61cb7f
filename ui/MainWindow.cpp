#include "ui/MainWindow.h"
#include "ui/widgets/WindowFit.h"

#include "core/spec/SpecIO.h"
#include "core/util/BuildId.h"
#include "ui/widgets/DocumentDialog.h"
#include "ui/widgets/FileDialogs.h"

#include "ui/models/RunLauncher.h"
#include "ui/models/RunListModel.h"
#include "ui/models/RunStoreThread.h"
#include "ui/models/StoreWatcher.h"
#include "ui/pages/ClusterPage.h"
#include "ui/pages/ComparePage.h"
#include "ui/pages/LivePage.h"
#include "ui/pages/LogsPage.h"
#include "ui/pages/NewRunPage.h"
#include "ui/pages/PipelinePage.h"
#include "ui/pages/RunsPage.h"
#include "ui/widgets/PageIcons.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QShowEvent>
#include <QCryptographicHash>
#include <QDateTime>
#include <QDir>
#include <QFileInfo>
#include <QHeaderView>
#include <QKeySequence>
#include <QLabel>
#include <QListWidget>
#include <QMenuBar>
#include <QMessageBox>
#include <QScreen>
#include <QSettings>
#include <QSplitter>
#include <QStackedWidget>
#include <QStatusBar>
#include <QTableView>
#include <QTimer>

#include <algorithm>
#include <iterator>
#include <map>

namespace parallax {

namespace {
// Settings keys.
const char* kGeometry = "window/geometry";
const char* kState = "window/state";
const char* kPage = "window/page";
const char* kNavSplitter = "window/navigation";
const char* kNewRunSplitter = "newRun/splitter";
const char* kCompareMain = "compare/splitter";
const char* kCompareRight = "compare/plotSplitter";
const char* kRunsHeader = "runs/header";
const char* kRunsSplitter = "runs/splitter";
const char* kClusterSplitter = "cluster/splitter";

// The console's pages in navigation order: the one list the navigation, the View menu (Ctrl+1...)
// and the page stack follow. A new page is a row here (its icon is the page's own paintIcon), a
// value of MainWindow::Page at the same place, and its construction: in the constructor, or in
// createStorePages() for a page that reads the store (made again for each store).
struct PageEntry {
    MainWindow::Page id;
    const char* title; // translated in MainWindow's context
    IconPainter icon;
    bool perStore;
};
constexpr PageEntry kPages[] = {
    {MainWindow::NewRun, QT_TRANSLATE_NOOP("MainWindow", "New run"), &NewRunPage::paintIcon, false},
    {MainWindow::Live, QT_TRANSLATE_NOOP("MainWindow", "Live"), &LivePage::paintIcon, true},
    {MainWindow::Logs, QT_TRANSLATE_NOOP("MainWindow", "Logs"), &LogsPage::paintIcon, true},
    {MainWindow::Pipeline, QT_TRANSLATE_NOOP("MainWindow", "Pipeline"), &PipelinePage::paintIcon, true},
    {MainWindow::Runs, QT_TRANSLATE_NOOP("MainWindow", "Runs"), &RunsPage::paintIcon, true},
    {MainWindow::Compare, QT_TRANSLATE_NOOP("MainWindow", "Compare"), &ComparePage::paintIcon, true},
    {MainWindow::Cluster, QT_TRANSLATE_NOOP("MainWindow", "Cluster"), &ClusterPage::paintIcon, false},
};
static_assert(std::size(kPages) == MainWindow::PageCount, "one row of kPages per page");
constexpr bool inOrder() {
    for (size_t i = 0; i < std::size(kPages); ++i)
        if (int(kPages[i].id) != int(i)) return false;
    return true;
}
static_assert(inOrder(), "kPages follows MainWindow::Page");
} // namespace

MainWindow::MainWindow(const QString& storePath, QWidget* parent) : QMainWindow(parent) {
    setObjectName(QStringLiteral("ParallaxMainWindow"));
    setWindowIcon(applicationIcon());
    m_runs = new RunListModel(this);

    m_splitter = new QSplitter(Qt::Horizontal, this);
    m_nav = new QListWidget(m_splitter);
    m_stack = new QStackedWidget(m_splitter);
    m_splitter->addWidget(m_nav);
    m_splitter->addWidget(m_stack);
    m_splitter->setStretchFactor(1, 1);
    m_splitter->setCollapsible(1, false);
    setCentralWidget(m_splitter);

    m_newRun = new NewRunPage(m_stack);
    // "Run #N started" follows that run to its end.
    m_newRun->setRunList(m_runs);
    m_stack->addWidget(m_newRun);
    // The store's pages go between these two (createStorePages inserts them at their places).
    m_cluster = new ClusterPage(m_stack);
    m_stack->addWidget(m_cluster);
    buildNavigation();
    buildMenus();

    m_storeLabel = new QLabel(this);
    m_storeLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_runningLabel = new QLabel(this);
    statusBar()->addPermanentWidget(m_runningLabel);
    statusBar()->addPermanentWidget(m_storeLabel);

    connect(m_newRun, &NewRunPage::runLaunched, this, [this](qint64 id) {
        if (m_watcher) m_watcher->pollNow();
        openRun(id);
    });
    connect(m_newRun, &NewRunPage::statusMessage, this, [this](const QString& m) { statusBar()->showMessage(m, 8000); });
    connect(m_newRun, &NewRunPage::specFileChanged, this, [this](const QString& path) {
        setWindowFilePath(path);
        // The form opens on it next time on this store.
        if (!path.isEmpty()) QSettings().setValue(storeSettingsKey("lastSpec"), QFileInfo(path).absoluteFilePath());
    });
    connect(m_cluster, &ClusterPage::profilesChanged, m_newRun, &NewRunPage::reloadClusterProfiles);
    connect(m_cluster, &ClusterPage::statusMessage, this, [this](const QString& m) { statusBar()->showMessage(m, 8000); });
    connect(m_runs, &QAbstractItemModel::modelReset, this, &MainWindow::updateStatus);
    connect(m_runs, &QAbstractItemModel::rowsInserted, this, &MainWindow::updateStatus);
    connect(m_runs, &QAbstractItemModel::rowsRemoved, this, &MainWindow::updateStatus);
    connect(m_runs, &QAbstractItemModel::dataChanged, this, &MainWindow::updateStatus);
    // Durations of runs still going.
    auto* clock = new QTimer(this);
    clock->setInterval(1000);
    connect(clock, &QTimer::timeout, this,
            [this] { m_runs->setNow(double(QDateTime::currentMSecsSinceEpoch()) / 1000.0); });
    clock->start();

    setWindowTitle(tr("Parallax"));
    resize(1440, 900);
    openStore(storePath);
    restoreSettings();
    fitToScreen();
    openLastSpec();
}

void MainWindow::fitToScreen() {
    // A geometry saved on a larger screen (or the default size on a small one) would open partly off
    // the screen the window lands on. What must fit is the frame: the window system puts its title
    // bar and borders around geometry(), and says how wide they are once the window exists, so the
    // window is fitted again when it is first shown (showEvent).
    const QScreen* s = screen();
    if (!s || isMaximized() || isFullScreen()) return;
    const QRect frame = frameGeometry(), inner = geometry();
    const QMargins margins(inner.left() - frame.left(), inner.top() - frame.top(), frame.right() - inner.right(),
                           frame.bottom() - inner.bottom());
    const QSize minimum = minimumSizeHint().expandedTo(minimumSize()).grownBy(margins);
    const QRect fitted = fitWindowToScreen(frame, minimum, s->availableGeometry()).marginsRemoved(margins);
    if (fitted != inner) setGeometry(fitted);
}

void MainWindow::showEvent(QShowEvent* event) {
    QMainWindow::showEvent(event);
    if (event->spontaneous() || m_fittedShown) return;
    m_fittedShown = true;
    fitToScreen();
}

MainWindow::~MainWindow() {
    // Pages hold the watcher; they go first.
    destroyStorePages();
}

void MainWindow::buildNavigation() {
    m_nav->setObjectName(QStringLiteral("navigation"));
    m_nav->setIconSize(QSize(22, 22));
    m_nav->setSpacing(2);
    m_nav->setFrameShape(QFrame::NoFrame);
    m_nav->setUniformItemSizes(true);
    const QColor ink = palette().color(QPalette::WindowText);
    for (const PageEntry& p : kPages) {
        auto* item = new QListWidgetItem(pageIcon(p.icon, ink), tr(p.title), m_nav);
        item->setSizeHint(QSize(0, 36));
    }
    m_nav->setMinimumWidth(m_nav->fontMetrics().horizontalAdvance(QStringLiteral("New runMMMM")) + 30);
    m_nav->setMaximumWidth(260);
    connect(m_nav, &QListWidget::currentRowChanged, this, [this](int row) {
        if (row >= 0 && row < m_stack->count()) m_stack->setCurrentIndex(row);
    });
}

void MainWindow::buildMenus() {
    QMenu* file = menuBar()->addMenu(tr("&File"));
    QAction* openStore = file->addAction(tr("Open &store…"), this, &MainWindow::openStoreDialog);
    openStore->setShortcut(QKeySequence(tr("Ctrl+Shift+O")));
    file->addSeparator();
    QAction* openSpec = file->addAction(tr("&Open spec…"), this, [this] {
        showPage(NewRun);
        m_newRun->openSpecDialog();
    });
    openSpec->setShortcut(QKeySequence::Open);
    QAction* saveSpec = file->addAction(tr("&Save spec…"), this, [this] {
        showPage(NewRun);
        m_newRun->saveSpecDialog();
    });
    saveSpec->setShortcut(QKeySequence::Save);
    file->addSeparator();
    QAction* quit = file->addAction(tr("&Quit"), this, &QWidget::close);
    quit->setShortcut(QKeySequence::Quit);
    quit->setToolTip(tr("Runs keep going: their supervisors do not depend on the console"));

    QMenu* view = menuBar()->addMenu(tr("&View"));
    for (const PageEntry& p : kPages) {
        QAction* a = view->addAction(m_nav->item(p.id)->icon(), tr(p.title), this, [this, id = p.id] { showPage(id); });
        a->setShortcut(QKeySequence(Qt::CTRL | Qt::Key(Qt::Key_1 + int(p.id))));
    }

    QMenu* help = menuBar()->addMenu(tr("&Help"));
    QAction* guide = help->addAction(tr("&Guide"), this, [this] { showDocument(QStringLiteral("guide.md")); });
    guide->setShortcut(QKeySequence::HelpContents);
    help->addAction(tr("&Spec reference"), this, [this] { showDocument(QStringLiteral("spec.md")); });
    help->addAction(tr("&GPU runs"), this, [this] { showDocument(QStringLiteral("gpu.md")); });
    help->addSeparator();
    help->addAction(tr("&About Parallax"), this, [this] {
        auto* box = new QMessageBox(QMessageBox::Information, tr("About Parallax"), aboutText(), QMessageBox::Close, this);
        box->setAttribute(Qt::WA_DeleteOnClose);
        box->setTextInteractionFlags(Qt::TextSelectableByMouse);
        box->open();
    });
}

void MainWindow::showDocument(const QString& name) {
    if (!m_document) {
        m_document = new DocumentDialog(name, this);
    } else {
        m_document->openDocument(name);
    }
    m_document->show();
    m_document->raise();
    m_document->activateWindow();
}

DocumentDialog* MainWindow::documentDialog() const { return m_document.data(); }

QString MainWindow::aboutText() const {
    return tr("%1\nQt %2\nStore: %3\n\nA console for distributed training: launch, watch, compare.")
        .arg(QString::fromStdString(versionLine("Parallax")), QString::fromLatin1(qVersion()),
             QDir::toNativeSeparators(m_storePath));
}

void MainWindow::setCliPath(const QString& path) {
    m_cliPath = path;
    if (m_attacher) m_attacher->setCliPath(path);
    if (m_live) m_live->setCliProgram(path);
    m_newRun->launcher()->setCliPath(path);
}

void MainWindow::createStorePages() {
    m_watcher = new StoreWatcher(m_storePath, this);
    createBatchFollower();
    m_writer = new RunStoreThread(m_storePath, this);
    m_runs->setWriter(m_writer);
    m_live = new LivePage(m_watcher, m_stack);
    if (!m_cliPath.isEmpty()) m_live->setCliProgram(m_cliPath);
    m_live->setRunList(m_runs);
    m_logs = new LogsPage(m_watcher, m_stack);
    m_pipeline = new PipelinePage(m_watcher, m_stack);
    m_runsPage = new RunsPage(m_runs, m_watcher, m_writer, m_stack);
    m_runsPage->setStorePath(m_storePath);
    m_compare = new ComparePage(m_runs, m_watcher, m_stack);
    const std::map<Page, QWidget*> made = {
        {Live, m_live}, {Logs, m_logs}, {Pipeline, m_pipeline}, {Runs, m_runsPage}, {Compare, m_compare}};
    for (const PageEntry& p : kPages)
        if (p.perStore) m_stack->insertWidget(p.id, made.at(p.id));
    // The Pipeline page reads a run's spans only while it is the page shown.
    m_pipeline->setInView(m_stack->currentWidget() == m_pipeline);
    connect(m_stack, &QStackedWidget::currentChanged, m_pipeline,
            [this] { m_pipeline->setInView(m_stack->currentWidget() == m_pipeline); });

    connectStorePages();
}

// A Slurm batch job goes on when its supervisor ends: the console has it followed again, once
// per run while it is open (parallax-cli attach --detach; a second follower is refused anyway).
void MainWindow::createBatchFollower() {
    m_attacher = new RunLauncher(this);
    m_attacher->setStorePath(m_storePath);
    if (!m_cliPath.isEmpty()) m_attacher->setCliPath(m_cliPath);
    connect(m_watcher, &StoreWatcher::unfollowedBatchRuns, this, [this](const QList<qint64>& runs) {
        for (qint64 id : runs) {
            if (m_attached.contains(id) || m_attacher->isBusy()) continue;
            m_attached.insert(id);
            statusBar()->showMessage(
                tr("Nobody followed the Slurm batch job of run #%1: following it again (parallax-cli attach %1)").arg(id),
                10000);
            m_attacher->attach(id);
        }
    });
    connect(m_attacher, &RunLauncher::failed, this, [this](const QString& message) {
        statusBar()->showMessage(message, 15000);
    });
}

void MainWindow::connectStorePages() {
    connect(m_watcher, &StoreWatcher::runsChanged, this, [this](const std::vector<RunRecord>& runs) {
        m_runs->setNow(double(QDateTime::currentMSecsSinceEpoch()) / 1000.0);
        // Live follows the newest running run as the list changes (runFollowed below).
        m_runs->setRuns(runs);
        // The first time: land on the Live page when a run is going, which is what a person
        // reopening the console after a crash or at 3 a.m. wants to see.
        if (!m_pickedLiveRun) {
            m_pickedLiveRun = true;
            const bool going = std::any_of(runs.begin(), runs.end(),
                                           [](const RunRecord& r) { return r.state == RunState::Running; });
            if (going && m_live && m_live->run() != 0) showPage(Live);
        }
    });
    connect(m_live, &LivePage::runFollowed, this, [this](qint64 run, const QString& message) {
        m_logs->setRun(run);
        m_pipeline->setRun(run);
        statusBar()->showMessage(message, 15000);
    });
    connect(m_live, &LivePage::openRun, this, &MainWindow::openRun);
    connect(m_watcher, &StoreWatcher::storeError, this,
            [this](const QString& message) { statusBar()->showMessage(tr("Store: %1").arg(message), 15000); });
    connect(m_writer, &RunStoreThread::failed, this,
            [this](const QString& message) { statusBar()->showMessage(tr("Store: %1").arg(message), 15000); });
    connect(m_writer, &RunStoreThread::written, m_watcher, &StoreWatcher::pollNow);
    connect(m_runsPage, &RunsPage::openRun, this, &MainWindow::openRun);
    connect(m_runsPage, &RunsPage::compareRuns, this, [this](const QList<qint64>& ids) {
        m_compare->setCheckedRuns(ids);
        showPage(Compare);
    });
    connect(m_runsPage, &RunsPage::statusMessage, this, [this](const QString& m) { statusBar()->showMessage(m, 8000); });
    connect(m_compare, &ComparePage::openRun, this, &MainWindow::openRun);
    connect(m_live, &LivePage::showRankLogs, this, [this](qint64 run, int rank) {
        m_logs->setRun(run);
        m_logs->showRankWithSupervisor(rank);
        showPage(Logs);
    });
    connect(m_live, &LivePage::fixAndRelaunch, this, &MainWindow::editRunSpec);
    connect(m_live, &LivePage::resumeWithChanges, this, &MainWindow::resumeWithChanges);
    connect(m_live, &LivePage::runStarted, this, &MainWindow::openRun);
    connect(m_live, &LivePage::commandFinished, this, [this](const QStringList& arguments, bool ok, const QString& output) {
        statusBar()->showMessage(ok ? tr("parallax-cli %1: done").arg(arguments.join(QChar(' ')))
                                    : tr("parallax-cli %1 failed: %2").arg(arguments.join(QChar(' ')), output),
                                 8000);
        if (m_watcher) m_watcher->pollNow();
    });
}

void MainWindow::destroyStorePages() {
    for (QWidget* page : std::initializer_list<QWidget*>{m_compare, m_runsPage, m_pipeline, m_logs, m_live}) {
        if (!page) continue;
        m_stack->removeWidget(page);
        delete page;
    }
    m_compare = nullptr;
    m_runsPage = nullptr;
    m_pipeline = nullptr;
    m_logs = nullptr;
    m_live = nullptr;
    m_runs->setWriter(nullptr);
    delete m_writer;
    delete m_watcher;
}

void MainWindow::openStore(const QString& path) {
    const QString absolute = QFileInfo(path).absoluteFilePath();
    if (absolute == m_storePath && m_watcher) return;
    const int page = m_stack->currentIndex();
    // Save the current pages' splitters before they are replaced.
    if (m_compare) saveSettings();
    destroyStorePages();
    m_storePath = absolute;
    m_pickedLiveRun = false;
    m_runs->setRuns({});
    QDir().mkpath(QFileInfo(absolute).absolutePath());
    createStorePages();
    m_newRun->setStorePath(absolute);
    m_cluster->setStorePath(absolute);
    if (page >= 0) showPage(Page(page));
    QSettings().setValue(QStringLiteral("store/path"), absolute);
    m_storeLabel->setText(tr("Store: %1").arg(QDir::toNativeSeparators(absolute)));
    m_storeLabel->setToolTip(absolute);
    restoreStorePageSettings();
    updateStatus();
}

void MainWindow::openStoreDialog() {
    const QString path = FileDialogs::saveFile(this, tr("Open or create a store"), m_storePath,
                                                  tr("Parallax stores (*.db);;All files (*)"), false);
    if (!path.isEmpty()) openStore(path);
}

StoreWatcher* MainWindow::watcher() const {
    return m_watcher;
}

QWidget* MainWindow::page(Page page) const {
    return m_stack->widget(int(page));
}

void MainWindow::showPage(Page page) {
    if (page < 0 || page >= PageCount) return;
    m_nav->setCurrentRow(int(page));
    m_stack->setCurrentIndex(int(page));
}

MainWindow::Page MainWindow::currentPage() const {
    return Page(m_stack->currentIndex());
}

void MainWindow::openRun(qint64 id) {
    if (!m_live) return;
    m_live->setRun(id);
    m_logs->setRun(id);
    m_pipeline->setRun(id);
    m_pickedLiveRun = true;
    showPage(Live);
}

std::optional<RunSpec> MainWindow::storedSpec(qint64 id) {
    const std::optional<RunRecord> r = m_runs->run(id);
    if (!r || r->spec_toml.empty()) {
        statusBar()->showMessage(tr("Run #%1 has no stored spec to edit").arg(id), 8000);
        return std::nullopt;
    }
    try {
        return parseSpec(r->spec_toml, "run " + std::to_string(id));
    } catch (const std::exception& e) {
        statusBar()->showMessage(tr("The spec of run #%1 cannot be read: %2").arg(id).arg(QString::fromUtf8(e.what())), 8000);
        return std::nullopt;
    }
}

void MainWindow::resumeWithChanges(qint64 id) {
    const std::optional<RunSpec> spec = storedSpec(id);
    if (spec && m_newRun->resumeRunSpec(*spec, id)) showPage(NewRun);
}

void MainWindow::editRunSpec(qint64 id) {
    const std::optional<RunSpec> stored = storedSpec(id);
    if (!stored) return;
    const RunSpec& spec = *stored;
    const std::optional<RunRecord> r = m_runs->run(id);
    QString why = QString::fromStdString(runStateName(r->state));
    if (!r->exit_reason.empty()) why += QStringLiteral(": ") + QString::fromStdString(r->exit_reason);
    if (m_newRun->editRunSpec(spec, id, why)) showPage(NewRun);
}

int MainWindow::runningCount() const {
    return m_runs->runningCount();
}

void MainWindow::updateStatus() {
    const int running = runningCount();
    m_runningLabel->setText(running == 0 ? tr("No run going") : tr("%n running", nullptr, running));
}

QString MainWindow::storeSettingsKey(const char* key) const {
    // A group per store, named by a digest of its path (a path's slashes would nest groups).
    const QByteArray id = QCryptographicHash::hash(m_storePath.toUtf8(), QCryptographicHash::Sha1).toHex().left(16);
    return QStringLiteral("stores/%1/%2").arg(QString::fromLatin1(id), QLatin1String(key));
}

void MainWindow::saveSettings() const {
    QSettings settings;
    settings.setValue(QLatin1String(kGeometry), saveGeometry());
    settings.setValue(QLatin1String(kState), saveState());
    settings.setValue(QLatin1String(kPage), int(currentPage()));
    settings.setValue(QLatin1String(kNavSplitter), m_splitter->saveState());
    settings.setValue(QLatin1String(kNewRunSplitter), m_newRun->splitter()->saveState());
    settings.setValue(QLatin1String(kClusterSplitter), m_cluster->splitter()->saveState());
    // The store's own pages: kept apart per store (their columns and splits follow its runs).
    settings.setValue(storeSettingsKey("path"), m_storePath);
    if (m_compare) {
        settings.setValue(storeSettingsKey(kCompareMain), m_compare->mainSplitter()->saveState());
        settings.setValue(storeSettingsKey(kCompareRight), m_compare->rightSplitter()->saveState());
    }
    if (m_runsPage) {
        settings.setValue(storeSettingsKey(kRunsHeader), m_runsPage->view()->horizontalHeader()->saveState());
        settings.setValue(storeSettingsKey(kRunsSplitter), m_runsPage->splitter()->saveState());
    }
}

void MainWindow::restoreSettings() {
    const QSettings settings;
    if (settings.contains(QLatin1String(kGeometry))) restoreGeometry(settings.value(QLatin1String(kGeometry)).toByteArray());
    if (settings.contains(QLatin1String(kState))) restoreState(settings.value(QLatin1String(kState)).toByteArray());
    if (settings.contains(QLatin1String(kNavSplitter)))
        m_splitter->restoreState(settings.value(QLatin1String(kNavSplitter)).toByteArray());
    else m_splitter->setSizes({170, 1270});
    if (settings.contains(QLatin1String(kNewRunSplitter)))
        m_newRun->splitter()->restoreState(settings.value(QLatin1String(kNewRunSplitter)).toByteArray());
    if (settings.contains(QLatin1String(kClusterSplitter)))
        m_cluster->splitter()->restoreState(settings.value(QLatin1String(kClusterSplitter)).toByteArray());
    restoreStorePageSettings();
    showPage(Page(std::clamp(settings.value(QLatin1String(kPage), int(NewRun)).toInt(), 0, PageCount - 1)));
}

void MainWindow::restoreStorePageSettings() {
    const QSettings settings;
    auto restore = [&](const char* key, auto apply) {
        const QString own = storeSettingsKey(key);
        if (settings.contains(own)) apply(settings.value(own).toByteArray());
    };
    if (m_compare) {
        restore(kCompareMain, [this](const QByteArray& s) { m_compare->mainSplitter()->restoreState(s); });
        restore(kCompareRight, [this](const QByteArray& s) { m_compare->rightSplitter()->restoreState(s); });
    }
    if (m_runsPage) {
        restore(kRunsHeader, [this](const QByteArray& s) { m_runsPage->view()->horizontalHeader()->restoreState(s); });
        restore(kRunsSplitter, [this](const QByteArray& s) { m_runsPage->splitter()->restoreState(s); });
    }
}

QString MainWindow::lastSpecOfStore() const {
    return QSettings().value(storeSettingsKey("lastSpec")).toString();
}

void MainWindow::openLastSpec() {
    const QString path = lastSpecOfStore();
    if (path.isEmpty()) return;
    if (!QFileInfo(path).isFile()) {
        statusBar()->showMessage(tr("The last spec of this store, %1, is gone; the form shows the quick-start run").arg(path), 10000);
        return;
    }
    QString error;
    if (m_newRun->loadSpecFile(path, &error))
        statusBar()->showMessage(tr("Opened %1, the last spec of this store").arg(QDir::toNativeSeparators(path)), 8000);
    else
        statusBar()->showMessage(tr("The last spec of this store could not be opened: %1").arg(error), 15000);
}

void MainWindow::closeEvent(QCloseEvent* event) {
    // Runs belong to their supervisors: closing the console stops none of them.
    saveSettings();
    QMainWindow::closeEvent(event);
}

} // namespace parallax
