#include "BrowseTestSupport.h"

#include "ui/MainWindow.h"
#include "ui/models/ProbeCommand.h"
#include "ui/models/RunLauncher.h"
#include "ui/models/RunListModel.h"
#include "ui/pages/ComparePage.h"

#include <QAbstractItemView>
#include <QAction>
#include <QApplication>
#include <QDialog>
#include <QHeaderView>
#include <QMenu>
#include <QMenuBar>
#include <QPointer>
#include <QPushButton>
#include <QTimer>
#include <QToolButton>

#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <ostream>

using namespace parallax;
using namespace parallax::test;

namespace {

// Closes every dialog and menu that opens while it lives, modal or not, as Escape would: a modal
// one's exec() returns Rejected, so a file dialog picks nothing and a question keeps things as
// they were.
class DialogCloser {
public:
    explicit DialogCloser(const QWidget* window) : m_window(window) {
        m_timer.setInterval(10);
        QObject::connect(&m_timer, &QTimer::timeout, [this] { closeAll(); });
        m_timer.start();
    }
    int closed() const { return m_closed; }

    void closeAll() {
        QList<QPointer<QWidget>> open;
        for (QWidget* w : QApplication::topLevelWidgets())
            if (w != m_window && w->isVisible()) open << w;
        for (const QPointer<QWidget>& w : open) {
            if (!w) continue;
            if (auto* dialog = qobject_cast<QDialog*>(w.data())) {
                dialog->reject();
                ++m_closed;
            } else if (auto* menu = qobject_cast<QMenu*>(w.data())) {
                menu->close();
                ++m_closed;
            }
        }
    }

private:
    const QWidget* m_window;
    QTimer m_timer;
    int m_closed = 0;
};

// Said before each click, so that a crash names what it followed.
void say(const char* what, const QString& name) {
    std::fprintf(stderr, "click-through: %s \"%s\"\n", what, qPrintable(name));
}

void settle() { QTest::qWait(20); }

// A person's first look: the first row of every list and table on the page selected, so that
// what acts on a selected run is enabled.
void selectFirstRows(QWidget* page) {
    for (QAbstractItemView* view : page->findChildren<QAbstractItemView*>()) {
        // A header shares its table's selection: selecting through it would undo the table's.
        if (qobject_cast<QHeaderView*>(view)) continue;
        if (!view->isVisible() || !view->model() || view->model()->rowCount() == 0) continue;
        view->setCurrentIndex(view->model()->index(0, 0));
    }
}

// Presses every enabled push and tool button of `page` and triggers every enabled action it
// holds (context menus, tool button menus), showing the page again before each (a button may
// open another page or close the window); then resizes the window. Returns how many it pressed
// or triggered.
int clickThrough(MainWindow& w, MainWindow::Page id) {
    int clicked = 0;
    auto again = [&] {
        if (!w.isVisible()) w.show();
        w.showPage(id);
    };
    again();
    QWidget* page = w.page(id);
    selectFirstRows(page);
    QList<QPointer<QAbstractButton>> buttons;
    for (QAbstractButton* b : page->findChildren<QAbstractButton*>())
        if (qobject_cast<QPushButton*>(b) || qobject_cast<QToolButton*>(b)) buttons << b;
    for (const QPointer<QAbstractButton>& b : buttons) {
        again();
        if (!b || !b->isVisible() || !b->isEnabled()) continue;
        say("button", b->text().isEmpty() ? b->toolTip() : b->text());
        b->click();
        ++clicked;
        settle();
    }
    QList<QPointer<QAction>> actions;
    for (QAction* a : page->findChildren<QAction*>()) actions << a;
    for (const QPointer<QAction>& a : actions) {
        again();
        if (!a || !a->isEnabled() || a->isSeparator()) continue;
        say("action", a->text());
        a->trigger();
        ++clicked;
        settle();
    }
    // The page at the sizes a window has, small to maximized, and back.
    again();
    for (const QSize& size : {QSize(800, 600), QSize(1920, 1080), QSize(1280, 720)}) {
        w.resize(size);
        settle();
    }
    return clicked;
}

// The window's own menus (File, View, Help); the window shows again after Quit.
int triggerWindowMenus(MainWindow& w) {
    int triggered = 0;
    for (QAction* top : w.menuBar()->actions()) {
        if (!top->menu()) continue;
        QList<QPointer<QAction>> entries;
        for (QAction* a : top->menu()->actions()) entries << a;
        for (const QPointer<QAction>& a : entries) {
            if (!a || !a->isEnabled() || a->isSeparator()) continue;
            say("menu", a->text());
            a->trigger();
            ++triggered;
            settle();
            if (!w.isVisible()) w.show();
        }
    }
    return triggered;
}

// A store in one of the states a person meets, and the run the window opens on Live (0: none).
struct StoreCase {
    const char* name;
    std::function<int64_t(CraftedStore&)> fill;
};

const StoreCase kCases[] = {
    {"Empty", [](CraftedStore&) { return int64_t(0); }},
    {"Running", [](CraftedStore& s) { return s.addRun(tinySpec("going"), RunState::Running, 5); }},
    {"Failed", [](CraftedStore& s) { return s.addRun(tinySpec("diverged"), RunState::Failed, 12); }},
    {"Continued",
     [](CraftedStore& s) {
         const int64_t parent = s.addRun(tinySpec("elastic"), RunState::Failed, 20);
         return s.addContinuation(tinySpec("elastic"), parent, 10, RunState::Succeeded, 15);
     }},
    // Enough runs that Compare's legend takes several lines, the last one not full.
    {"ManyRuns",
     [](CraftedStore& s) {
         int64_t last = 0;
         for (int i = 0; i < 6; ++i)
             last = s.addRun(tinySpec("gpt-1b-openwebtext-" + std::to_string(i)), RunState::Succeeded, 10);
         return s.addContinuation(tinySpec("gpt-1b-openwebtext-resumed"), last, 5, RunState::Failed, 10);
     }},
};

void PrintTo(const StoreCase& c, std::ostream* out) { *out << c.name; }

class ClickThrough : public ::testing::TestWithParam<StoreCase> {};

} // namespace

// No button, menu entry or context action of any page crashes the console, whatever the store
// holds. Every dialog that opens is dismissed, and the console runs a parallax-cli that is not
// there, so that nothing launches, stops or is deleted for real.
TEST_P(ClickThrough, EveryPageSurvivesEveryButtonAndAction) {
    IsolatedSettings settings;
    ProfileFolders profiles;
    CraftedStore store;
    const int64_t open = GetParam().fill(store);
    const size_t runsBefore = store.store.listRuns().size();

    MainWindow w(store.qpath());
    const QString missing = store.dir.filePath(QStringLiteral("no-such-parallax-cli"));
    w.setCliPath(missing);
    for (ProbeCommand* probe : w.findChildren<ProbeCommand*>()) probe->setCliPath(missing);
    for (RunLauncher* launcher : w.findChildren<RunLauncher*>()) launcher->setCliPath(missing);
    DialogCloser closer(&w);
    w.resize(1280, 720);
    w.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
    ASSERT_TRUE(waitFor([&] { return w.runsModel()->rowCount() == int(runsBefore); }));
    if (open) w.openRun(open);
    QList<qint64> all;
    for (const RunRecord& r : store.store.listRuns()) all << r.id;

    for (int p = 0; p < MainWindow::PageCount; ++p) {
        // Compare with every run ticked (Runs' Compare, clicked before, ticks only the selected one).
        if (p == MainWindow::Compare) {
            w.comparePage()->setCheckedRuns(all);
            EXPECT_TRUE(waitFor([&] { return w.comparePage()->loadedRuns().size() == size_t(all.size()); }));
        }
        EXPECT_GT(clickThrough(w, MainWindow::Page(p)), 0) << "page " << p << ": nothing to click";
    }
    EXPECT_GT(triggerWindowMenus(w), 0);
    settle();
    closer.closeAll();

    EXPECT_GT(closer.closed(), 0) << "no dialog opened (Help > About opens one)";
    for (QWidget* top : QApplication::topLevelWidgets())
        EXPECT_FALSE(top != &w && top->isVisible() && qobject_cast<QDialog*>(top)) << top->windowTitle().toStdString();
    // Every dialog was dismissed and the CLI is missing: no run was deleted, started or resumed.
    EXPECT_EQ(store.store.listRuns().size(), runsBefore);
}

INSTANTIATE_TEST_SUITE_P(Stores, ClickThrough, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<StoreCase>& info) { return std::string(info.param.name); });
