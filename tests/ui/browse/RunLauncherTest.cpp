#include "BrowseTestSupport.h"

#include "ui/models/RunLauncher.h"

#include <QFile>
#include <QSignalSpy>

#include <gtest/gtest.h>

using namespace parallax;
using namespace parallax::test;

TEST(RunLauncher, StartsParallaxCliDetachedAndReadsTheRunId) {
    QTemporaryDir dir;
    RunLauncher launcher;
    launcher.setCliPath(fakeCli(dir, "run 42 started (supervisor pid 777)\\n", 0));
    launcher.setStorePath(QStringLiteral("/data/my store.db"));
    QSignalSpy started(&launcher, &RunLauncher::started);
    QSignalSpy failed(&launcher, &RunLauncher::failed);
    launcher.launch(QStringLiteral("/specs/a b.toml"));
    EXPECT_TRUE(launcher.isBusy());
    ASSERT_TRUE(waitFor([&] { return started.count() + failed.count() > 0; }));
    ASSERT_EQ(started.count(), 1) << failed.value(0).value(0).toString().toStdString();
    EXPECT_EQ(started.first().at(0).toLongLong(), 42);
    EXPECT_FALSE(launcher.isBusy());
    QFile args(dir.filePath(QStringLiteral("args")));
    ASSERT_TRUE(args.open(QIODevice::ReadOnly));
    // One argument each, spaces and all: never a shell string.
    EXPECT_EQ(QString::fromUtf8(args.readAll()).split(QChar('\n'), Qt::SkipEmptyParts),
              (QStringList{"--store", "/data/my store.db", "run", "/specs/a b.toml", "--detach"}));
}

TEST(RunLauncher, ReportsFailuresWithWhatTheCliSaid) {
    QTemporaryDir dir;
    RunLauncher launcher;
    launcher.setCliPath(fakeCli(dir, "", 2));
    QSignalSpy failed(&launcher, &RunLauncher::failed);
    launcher.resume(7);
    ASSERT_TRUE(waitFor([&] { return failed.count() == 1; }));
    EXPECT_TRUE(failed.first().at(0).toString().contains(QStringLiteral("exit code 2")));

    launcher.setCliPath(dir.filePath(QStringLiteral("missing")));
    launcher.launch(QStringLiteral("x.toml"));
    ASSERT_EQ(failed.count(), 2);
    EXPECT_TRUE(failed.last().at(0).toString().contains(QStringLiteral("missing or not executable")));
}

TEST(RunLauncher, ParsesRunIds) {
    EXPECT_EQ(RunLauncher::parseRunId(QStringLiteral("12\n")), std::optional<qint64>(12));
    EXPECT_EQ(RunLauncher::parseRunId(QStringLiteral("Started run #8 in /x")), std::optional<qint64>(8));
    EXPECT_EQ(RunLauncher::parseRunId(QStringLiteral("id=31")), std::optional<qint64>(31));
    EXPECT_EQ(RunLauncher::parseRunId(QStringLiteral("nothing here")), std::nullopt);
}

TEST(RunLauncher, AsksARunToStopAndHandsBackWhatTheCliSaid) {
    QTemporaryDir dir;
    RunLauncher launcher;
    launcher.setCliPath(fakeCli(dir, "sent SIGTERM to supervisor pid 4242 of run 5\\n", 0));
    launcher.setStorePath(QStringLiteral("/data/my store.db"));
    QSignalSpy asked(&launcher, &RunLauncher::stopAsked);
    QSignalSpy failed(&launcher, &RunLauncher::failed);
    launcher.stop(5);
    EXPECT_TRUE(launcher.isBusy());
    ASSERT_TRUE(waitFor([&] { return asked.count() + failed.count() > 0; }));
    ASSERT_EQ(asked.count(), 1) << failed.value(0).value(0).toString().toStdString();
    EXPECT_EQ(asked.first().at(0).toLongLong(), 5);
    EXPECT_EQ(launcher.lastOutput(), QStringLiteral("sent SIGTERM to supervisor pid 4242 of run 5"));
    QFile args(dir.filePath(QStringLiteral("args")));
    ASSERT_TRUE(args.open(QIODevice::ReadOnly));
    EXPECT_EQ(QString::fromUtf8(args.readAll()).split(QChar('\n'), Qt::SkipEmptyParts),
              (QStringList{"--store", "/data/my store.db", "stop", "5"}));
    args.close();

    // Without a store, parallax-cli's own default is meant: no --store.
    launcher.setStorePath(QString());
    launcher.stop(6);
    ASSERT_TRUE(waitFor([&] { return asked.count() == 2; }));
    ASSERT_TRUE(args.open(QIODevice::ReadOnly));
    EXPECT_EQ(QString::fromUtf8(args.readAll()).split(QChar('\n'), Qt::SkipEmptyParts), (QStringList{"stop", "6"}));

    // A refusal comes back with what the command printed.
    launcher.setCliPath(fakeCli(dir, "run 6 is supervised on node3 (pid 7); run parallax-cli stop 6 there\\n", 2));
    launcher.stop(6);
    ASSERT_TRUE(waitFor([&] { return failed.count() == 1; }));
    EXPECT_EQ(failed.first().at(0).toString(),
              QStringLiteral("parallax-cli stop 6 failed (exit code 2):\nrun 6 is supervised on node3 (pid 7); run "
                             "parallax-cli stop 6 there"));
}
