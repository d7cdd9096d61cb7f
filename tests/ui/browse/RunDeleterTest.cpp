#include "BrowseTestSupport.h"

#include "ui/models/RunDeleter.h"
#include "ui/models/RunStoreThread.h"

#include <QDir>
#include <QFile>
#include <QSignalSpy>

#include <gtest/gtest.h>

using namespace parallax;
using namespace parallax::test;

namespace {

// A run folder with a file in it, as a supervisor leaves it.
QString makeFolder(const QString& path) {
    QDir().mkpath(path);
    QFile f(QDir(path).filePath(QStringLiteral("output.log")));
    if (f.open(QIODevice::WriteOnly)) f.write("rank 0: done\n");
    return path;
}

} // namespace

TEST(RunDeleter, DeletesAFinishedRunsRowsAndItsOwnFolderWhenAsked) {
    CraftedStore store;
    const int64_t keep = store.addRun(tinySpec("keep"), RunState::Succeeded, 5);
    const int64_t gone = store.addRun(tinySpec("gone"), RunState::Failed, 5);
    const QString folder = makeFolder(store.dir.filePath(QStringLiteral("runs/%1").arg(gone)));
    store.store.setRunDir(gone, folder.toStdString());
    RunStoreThread writer(store.qpath());
    RunDeleter deleter(&writer);
    QSignalSpy deleted(&deleter, &RunDeleter::deleted);
    QSignalSpy failed(&deleter, &RunDeleter::failed);

    QString error;
    ASSERT_TRUE(deleter.deleteRun(*store.store.run(gone), true, &error)) << error.toStdString();
    ASSERT_TRUE(waitFor([&] { return deleted.count() == 1; }));
    EXPECT_EQ(deleted.first().at(0).toLongLong(), gone);
    EXPECT_EQ(failed.count(), 0);
    RunStore reader(store.path);
    EXPECT_FALSE(reader.run(gone).has_value());
    EXPECT_TRUE(reader.metrics(gone).empty());
    EXPECT_TRUE(reader.run(keep).has_value());
    EXPECT_EQ(reader.metrics(keep).size(), 5u);
    EXPECT_FALSE(QDir(folder).exists());
}

TEST(RunDeleter, KeepsAFolderThatIsNotTheRunsOwnOrNotAskedFor) {
    CraftedStore store;
    const int64_t a = store.addRun(tinySpec("a"), RunState::Succeeded, 2);
    const int64_t b = store.addRun(tinySpec("b"), RunState::Stopped, 2);
    // Not named after the run: someone's folder the run was pointed at.
    const QString shared = makeFolder(store.dir.filePath(QStringLiteral("experiments")));
    store.store.setRunDir(a, shared.toStdString());
    const QString own = makeFolder(store.dir.filePath(QStringLiteral("runs/%1").arg(b)));
    store.store.setRunDir(b, own.toStdString());
    RunStoreThread writer(store.qpath());
    RunDeleter deleter(&writer);
    QSignalSpy deleted(&deleter, &RunDeleter::deleted);
    ASSERT_TRUE(deleter.deleteRun(*store.store.run(a), true));
    ASSERT_TRUE(deleter.deleteRun(*store.store.run(b), false));
    ASSERT_TRUE(waitFor([&] { return deleted.count() == 2; }));
    EXPECT_TRUE(QFile::exists(QDir(shared).filePath(QStringLiteral("output.log"))));
    EXPECT_TRUE(QFile::exists(QDir(own).filePath(QStringLiteral("output.log"))));
    EXPECT_FALSE(RunStore(store.path).run(a).has_value());
    EXPECT_FALSE(RunStore(store.path).run(b).has_value());
}

TEST(RunDeleter, RefusesRunsStillGoingAndWorksOnlyWithAStore) {
    CraftedStore store;
    const int64_t running = store.addRun(tinySpec("running"), RunState::Running, 3);
    const int64_t queued = store.addRun(tinySpec("queued"), RunState::Queued, 0);
    const int64_t done = store.addRun(tinySpec("done"), RunState::Succeeded, 3);
    RunStoreThread writer(store.qpath());
    RunDeleter deleter(&writer);
    QSignalSpy deleted(&deleter, &RunDeleter::deleted);
    QString error;
    EXPECT_FALSE(deleter.deleteRun(*store.store.run(running), false, &error));
    EXPECT_TRUE(error.contains(QStringLiteral("is running"))) << error.toStdString();
    EXPECT_FALSE(deleter.deleteRun(*store.store.run(queued), false, &error));
    EXPECT_TRUE(error.contains(QStringLiteral("is queued"))) << error.toStdString();
    writer.waitForIdle();
    QTest::qWait(20);
    EXPECT_EQ(deleted.count(), 0);
    EXPECT_TRUE(RunStore(store.path).run(running).has_value());
    EXPECT_TRUE(RunStore(store.path).run(queued).has_value());

    RunDeleter noStore(nullptr);
    EXPECT_FALSE(noStore.deleteRun(*store.store.run(done), false, &error));
    EXPECT_EQ(error, QStringLiteral("No store is open"));
    EXPECT_TRUE(RunStore(store.path).run(done).has_value());
}
