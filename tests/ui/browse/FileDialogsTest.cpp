#include "ui/widgets/FileDialogs.h"

#include "core/store/RunStore.h"

#include <QFileDialog>
#include <QTemporaryDir>
#include <QTest>

#include <gtest/gtest.h>

#include <unistd.h>

#include <fstream>
#include <string>

namespace parallax {
namespace {

// The POSIX locks this process holds, as /proc/locks lists them.
int locksOfThisProcess() {
    std::ifstream in("/proc/locks");
    const std::string me = " " + std::to_string(getpid()) + " ";
    int n = 0;
    for (std::string line; std::getline(in, line);)
        if (line.find(me) != std::string::npos) ++n;
    return n;
}

// A dialog that browses the store's folder (specs are commonly kept beside the store) must not
// open the store's files: that would drop this process's SQLite locks on them. Qt's stock dialog
// opens them to pick icons and loses all three.
TEST(FileDialogs, BrowsingTheStoresFolderKeepsTheConsolesLocks) {
    QTemporaryDir dir;
    const std::string path = dir.filePath(QStringLiteral("parallax.db")).toStdString();
    RunStore store(path);
    NewRun r;
    r.name = "held";
    store.createRun(r);
    std::ofstream(dir.filePath(QStringLiteral("spec.toml")).toStdString()) << "name = \"x\"\n";
    // A read in progress, as the console's watcher often has one.
    store.beginTransaction();
    ASSERT_EQ(store.listRuns().size(), 1u);
    const int before = locksOfThisProcess();
    ASSERT_GT(before, 0) << "no lock to lose: the test would prove nothing";

    QFileDialog dialog(nullptr, QStringLiteral("Open run spec"), dir.path(), QStringLiteral("All files (*)"));
    FileDialogs::prepare(dialog);
    dialog.show();
    // Long enough for the folder to be listed and every row's icon and type to be asked for.
    QTest::qWait(1500);
    EXPECT_EQ(locksOfThisProcess(), before);
    dialog.close();
    store.rollback();
}

} // namespace
} // namespace parallax
