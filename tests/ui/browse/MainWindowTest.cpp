#include "BrowseTestSupport.h"

#include "core/spec/SpecIO.h"
#include "ui/MainWindow.h"
#include "ui/models/RunListModel.h"
#include "ui/pages/ComparePage.h"
#include "ui/pages/LivePage.h"
#include "ui/models/SpecFormModel.h"
#include "ui/pages/NewRunPage.h"
#include "ui/pages/RunsPage.h"
#include "ui/widgets/DocumentDialog.h"
#include "ui/widgets/WindowFit.h"

#include <QLabel>
#include <QListWidget>
#include <QMenuBar>
#include <QTextBrowser>
#include <QPushButton>
#include <QFile>
#include <QGuiApplication>
#include <QProcess>
#include <QScreen>
#include <QSettings>
#include <QTemporaryDir>
#include <QSplitter>
#include <QStatusBar>

#include <QScrollBar>
#include <QTextBlock>
#include <gtest/gtest.h>

using namespace parallax;
using namespace parallax::test;

namespace {

QString statusTexts(const MainWindow& w) {
    QStringList texts;
    for (const QLabel* l : w.statusBar()->findChildren<QLabel*>()) texts << l->text();
    return texts.join(QChar('|'));
}

} // namespace

TEST(MainWindow, ShowsTheStoreAndTheRunningRunsAndOpensTheNewestRunningRun) {
    IsolatedSettings settings;
    CraftedStore store;
    store.addRun(tinySpec("done"), RunState::Succeeded, 3);
    const int64_t running = store.addRun(tinySpec("going"), RunState::Running, 3);
    MainWindow w(store.qpath());
    ASSERT_TRUE(waitFor([&] { return w.runsModel()->rowCount() == 2; }));
    EXPECT_EQ(w.runningCount(), 1);
    EXPECT_TRUE(statusTexts(w).contains(store.qpath())) << statusTexts(w).toStdString();
    EXPECT_TRUE(statusTexts(w).contains(QStringLiteral("1 running"))) << statusTexts(w).toStdString();
    EXPECT_EQ(w.livePage()->run(), running);
    EXPECT_EQ(w.newRunPage()->storePath(), store.qpath());
}

TEST(MainWindow, NavigatesBetweenPages) {
    IsolatedSettings settings;
    CraftedStore store;
    const int64_t id = store.addRun(tinySpec("a"), RunState::Succeeded, 3);
    MainWindow w(store.qpath());
    auto* nav = w.findChild<QListWidget*>(QStringLiteral("navigation"));
    ASSERT_NE(nav, nullptr);
    ASSERT_EQ(nav->count(), int(MainWindow::PageCount));
    nav->setCurrentRow(MainWindow::Runs);
    EXPECT_EQ(w.currentPage(), MainWindow::Runs);
    w.openRun(id);
    EXPECT_EQ(w.currentPage(), MainWindow::Live);
    EXPECT_EQ(nav->currentRow(), int(MainWindow::Live));
    EXPECT_EQ(w.livePage()->run(), id);
}

TEST(MainWindow, RemembersGeometryPageAndSplitters) {
    IsolatedSettings settings;
    CraftedStore store;
    QList<int> sizes, runsSizes;
    {
        MainWindow w(store.qpath());
        w.resize(1000, 700);
        w.show();
        ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
        w.showPage(MainWindow::Runs);
        QSplitter* runs = w.runsPage()->splitter();
        const int height = runs->sizes().value(0) + runs->sizes().value(1);
        runs->setSizes({height - 150, 150});
        runsSizes = runs->sizes();
        w.showPage(MainWindow::Compare);
        w.comparePage()->mainSplitter()->setSizes({300, 700});
        sizes = w.comparePage()->mainSplitter()->sizes();
        w.saveSettings();
    }
    MainWindow again(store.qpath());
    again.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&again));
    EXPECT_EQ(again.currentPage(), MainWindow::Compare);
    // As saved, within this screen's free area (the test's screen may be smaller than the window).
    const QRect fitted = fitWindowToScreen(QRect(again.pos(), QSize(1000, 700)),
                                           again.minimumSizeHint().expandedTo(again.minimumSize()),
                                           again.screen()->availableGeometry());
    EXPECT_EQ(again.size(), fitted.size());
    EXPECT_EQ(again.comparePage()->mainSplitter()->sizes(), sizes);
    // The Runs page's table over its detail pane, as split.
    again.showPage(MainWindow::Runs);
    EXPECT_EQ(again.runsPage()->splitter()->sizes(), runsSizes);
}

// A window saved at 1440 x 900, opened again on a 1280 x 720 screen: its frame (title bar and
// borders included) lies wholly on the screen. The offscreen platform takes its screens when the
// application starts (QT_QPA_PLATFORM=offscreen:configfile=FILE), so the next test runs in a process
// of its own on such a screen.
TEST(MainWindow, OpensWhollyOnAScreenSmallerThanItsSavedGeometry) {
    if (QGuiApplication::platformName() != QStringLiteral("offscreen")) GTEST_SKIP() << "needs the offscreen platform";
    QTemporaryDir dir;
    const QString config = dir.filePath(QStringLiteral("screen.json"));
    QFile file(config);
    ASSERT_TRUE(file.open(QIODevice::WriteOnly));
    file.write(R"({"windowFrameMargins": true, "screens": [{"name": "small", "x": 0, "y": 0, "width": 1280,
                   "height": 720, "logicalDpi": 96, "logicalBaseDpi": 96, "dpr": 1}]})");
    file.close();
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen:configfile=") + config);
    QProcess child;
    child.setProcessEnvironment(env);
    child.setProcessChannelMode(QProcess::MergedChannels);
    child.start(QCoreApplication::applicationFilePath(),
                {QStringLiteral("--gtest_filter=MainWindowOnASmallScreen.*"), QStringLiteral("--gtest_also_run_disabled_tests")});
    ASSERT_TRUE(child.waitForFinished(120000));
    const QString out = QString::fromLocal8Bit(child.readAll());
    EXPECT_EQ(child.exitCode(), 0) << out.toStdString();
    EXPECT_TRUE(out.contains(QStringLiteral("[  PASSED  ] 1 test"))) << out.toStdString();
}

// Run by the test above, on its 1280 x 720 screen.
TEST(MainWindowOnASmallScreen, DISABLED_FitsTheFrameOfASavedLargerWindow) {
    const QScreen* screen = QGuiApplication::primaryScreen();
    ASSERT_NE(screen, nullptr);
    ASSERT_EQ(screen->availableGeometry(), QRect(0, 0, 1280, 720));
    IsolatedSettings settings;
    CraftedStore store;
    {
        // As it was left on a 1440 x 900 screen.
        MainWindow w(store.qpath());
        w.setGeometry(40, 30, 1440, 900);
        w.saveSettings();
    }
    MainWindow again(store.qpath());
    again.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&again));
    const QRect frame = again.frameGeometry();
    EXPECT_NE(frame, again.geometry()) << "the platform gives the window a frame";
    EXPECT_TRUE(screen->availableGeometry().contains(frame))
        << frame.x() << "," << frame.y() << " " << frame.width() << "x" << frame.height();
    // As large as the screen lets it be.
    EXPECT_EQ(frame.size(), QSize(1280, 720)) << frame.width() << "x" << frame.height();
}

// What belongs to a store is kept apart per store: the spec last opened in the New run form (opened
// again at the next start on that store) and the Compare page's splitter.
TEST(MainWindow, RemembersTheLastSpecAndTheStorePagesApartPerStore) {
    IsolatedSettings settings;
    CraftedStore first, second;
    QTemporaryDir specs;
    const QString alpha = specs.filePath(QStringLiteral("alpha.toml"));
    writeSpecFile(tinySpec("alpha"), alpha.toStdString());
    QList<int> firstSizes, secondSizes;
    {
        MainWindow w(first.qpath());
        w.resize(1000, 700);
        w.show();
        ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
        QString error;
        ASSERT_TRUE(w.newRunPage()->loadSpecFile(alpha, &error)) << error.toStdString();
        EXPECT_EQ(w.lastSpecOfStore(), alpha);
        w.showPage(MainWindow::Compare);
        w.comparePage()->mainSplitter()->setSizes({250, 750});
        firstSizes = w.comparePage()->mainSplitter()->sizes();
        w.openStore(second.qpath()); // saves the first store's pages on the way
        EXPECT_TRUE(w.lastSpecOfStore().isEmpty());
        w.comparePage()->mainSplitter()->setSizes({650, 350});
        secondSizes = w.comparePage()->mainSplitter()->sizes();
        ASSERT_NE(firstSizes, secondSizes);
        w.saveSettings();
    }
    {
        MainWindow again(first.qpath());
        again.show();
        ASSERT_TRUE(QTest::qWaitForWindowExposed(&again));
        EXPECT_EQ(again.newRunPage()->formModel()->spec().name, "alpha");
        EXPECT_EQ(again.comparePage()->mainSplitter()->sizes(), firstSizes);
    }
    MainWindow other(second.qpath());
    other.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&other));
    EXPECT_NE(other.newRunPage()->formModel()->spec().name, "alpha");
    EXPECT_EQ(other.comparePage()->mainSplitter()->sizes(), secondSizes);

    // A last spec that is gone leaves the form as it is and says so.
    QFile::remove(alpha);
    MainWindow gone(first.qpath());
    EXPECT_NE(gone.newRunPage()->formModel()->spec().name, "alpha");
    EXPECT_TRUE(gone.statusBar()->currentMessage().contains(QStringLiteral("is gone"))) << gone.statusBar()->currentMessage().toStdString();
}

TEST(MainWindow, OpensAnotherStore) {
    IsolatedSettings settings;
    CraftedStore first;
    first.addRun(tinySpec("one"), RunState::Succeeded, 2);
    CraftedStore second;
    second.addRun(tinySpec("two"), RunState::Succeeded, 2);
    second.addRun(tinySpec("three"), RunState::Failed, 2);
    MainWindow w(first.qpath());
    ASSERT_TRUE(waitFor([&] { return w.runsModel()->rowCount() == 1; }));
    w.openStore(second.qpath());
    ASSERT_TRUE(waitFor([&] { return w.runsModel()->rowCount() == 2; }));
    EXPECT_EQ(w.newRunPage()->storePath(), second.qpath());
    EXPECT_EQ(QSettings().value(QStringLiteral("store/path")).toString(), second.qpath());
}

TEST(MainWindow, AFailedRunSaysWhyAndOpensItsSpecToFixAndRelaunch) {
    IsolatedSettings settings;
    CraftedStore store;
    RunSpec spec = tinySpec("diverged");
    spec.train.lr = 3e-3;
    const int64_t id = store.addRun(spec, RunState::Failed, 12);
    MainWindow w(store.qpath());
    ASSERT_TRUE(waitFor([&] { return w.runsModel()->rowCount() == 1; }));
    w.openRun(id);
    LivePage* live = w.livePage();
    ASSERT_TRUE(waitFor([&] { return !live->failureText().isEmpty(); }));
    EXPECT_EQ(live->failureText().toStdString(), "Failed after 12 steps: test (exit code 1)");
    QPushButton* fix = nullptr;
    for (QPushButton* b : live->findChildren<QPushButton*>())
        if (b->text().startsWith(QStringLiteral("Fix and relaunch"))) fix = b;
    ASSERT_NE(fix, nullptr);
    fix->click();
    EXPECT_EQ(w.currentPage(), MainWindow::NewRun);
    EXPECT_EQ(w.newRunPage()->editedRun(), id);
    EXPECT_DOUBLE_EQ(w.newRunPage()->formModel()->spec().train.lr, 3e-3);
    EXPECT_EQ(w.newRunPage()->formModel()->spec().name, "diverged");
    EXPECT_TRUE(w.newRunPage()->messageLabel()->text().contains(QStringLiteral("Run #%1 failed: test").arg(id)))
        << w.newRunPage()->messageLabel()->text().toStdString();

    // Another spec replaces the note about that run.
    w.newRunPage()->setSpec(tinySpec("other"));
    EXPECT_EQ(w.newRunPage()->editedRun(), 0);
    EXPECT_TRUE(w.newRunPage()->messageLabel()->text().isEmpty());

    // A run that succeeded has nothing to fix.
    const int64_t ok = store.addRun(tinySpec("fine"), RunState::Succeeded, 3);
    ASSERT_TRUE(waitFor([&] { return w.runsModel()->rowCount() == 2; }));
    w.openRun(ok);
    ASSERT_TRUE(waitFor([&] { return live->stateText() == QStringLiteral("succeeded"); }));
    QTest::qWait(60);
    EXPECT_TRUE(live->failureText().isEmpty());
}

TEST(MainWindow, ReopenedWhereARunIsGoingItLandsOnThatRunsLivePage) {
    IsolatedSettings settings;
    CraftedStore store;
    {
        MainWindow w(store.qpath());
        w.showPage(MainWindow::NewRun);
        w.saveSettings();
    }
    store.addRun(tinySpec("done"), RunState::Succeeded, 3);
    const int64_t running = store.addRun(tinySpec("going"), RunState::Running, 3);
    MainWindow again(store.qpath());
    ASSERT_TRUE(waitFor([&] { return again.currentPage() == MainWindow::Live; }));
    EXPECT_EQ(again.livePage()->run(), running);

    // A run started from a terminal while the console is open: Live follows it and says so.
    const int64_t later = store.addRun(tinySpec("from-terminal"), RunState::Running, 1);
    ASSERT_TRUE(waitFor([&] { return again.livePage()->run() == later; }));
    EXPECT_TRUE(again.statusBar()->currentMessage().contains(QStringLiteral("Live follows run #%1").arg(later)))
        << again.statusBar()->currentMessage().toStdString();

    // Without a run going it opens on the page it was left on.
    CraftedStore quiet;
    quiet.addRun(tinySpec("done"), RunState::Succeeded, 3);
    MainWindow calm(quiet.qpath());
    ASSERT_TRUE(waitFor([&] { return calm.runsModel()->rowCount() == 1; }));
    QTest::qWait(50);
    EXPECT_EQ(calm.currentPage(), MainWindow::NewRun);
}

TEST(MainWindow, HelpShowsTheGuideTheSpecReferenceAndTheVersion) {
    IsolatedSettings settings;
    CraftedStore store;
    MainWindow w(store.qpath());
    QMenu* help = nullptr;
    for (QAction* a : w.menuBar()->actions())
        if (a->text() == QStringLiteral("&Help")) help = a->menu();
    ASSERT_NE(help, nullptr);
    QStringList items;
    for (QAction* a : help->actions())
        if (!a->isSeparator()) items << a->text();
    EXPECT_TRUE(items.contains(QStringLiteral("&Guide"))) << items.join(QChar(',')).toStdString();
    EXPECT_TRUE(items.contains(QStringLiteral("&Spec reference")));
    EXPECT_TRUE(items.contains(QStringLiteral("&About Parallax")));

    for (QAction* a : help->actions())
        if (a->text() == QStringLiteral("&Guide")) a->trigger();
    ASSERT_NE(w.documentDialog(), nullptr);
    EXPECT_TRUE(w.documentDialog()->isVisible());
    EXPECT_EQ(w.documentDialog()->windowTitle(), QStringLiteral("Parallax user guide"));
    EXPECT_TRUE(w.documentDialog()->browser()->toPlainText().contains(QStringLiteral("First run")));
    // Its contents beside it: a click brings a section's heading to the top of the view.
    DocumentDialog* dialog = w.documentDialog();
    QStringList sections;
    for (int i = 0; i < dialog->contents()->count(); ++i) sections << dialog->contents()->item(i)->text().trimmed();
    ASSERT_FALSE(sections.isEmpty());
    EXPECT_EQ(sections.first(), QStringLiteral("First run"));
    const qsizetype pages = sections.indexOf(QStringLiteral("Console pages"));
    ASSERT_GT(pages, 0) << sections.join(QChar(',')).toStdString();
    dialog->showSection(static_cast<int>(pages));
    EXPECT_GT(dialog->browser()->verticalScrollBar()->value(), 0);
    EXPECT_EQ(dialog->browser()->cursorForPosition(QPoint(10, 10)).block().text(), QStringLiteral("Console pages"));
    for (QAction* a : help->actions())
        if (a->text() == QStringLiteral("&Spec reference")) a->trigger();
    EXPECT_TRUE(w.documentDialog()->source().toString().endsWith(QStringLiteral("spec.md")))
        << w.documentDialog()->source().toString().toStdString();
    EXPECT_FALSE(w.documentDialog()->browser()->toPlainText().isEmpty());

    // About: the version and build id, as parallax-cli --version prints them.
    const QString about = w.aboutText();
    EXPECT_TRUE(about.startsWith(QStringLiteral("Parallax "))) << about.toStdString();
    EXPECT_TRUE(about.contains(QStringLiteral("(build "))) << about.toStdString();
    EXPECT_TRUE(about.contains(store.qpath()));
}
