#include "BrowseTestSupport.h"

#include "core/spec/SpecIO.h"
#include "ui/models/SpecDocument.h"
#include "ui/models/SpecFormModel.h"
#include "ui/models/SpecPresets.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QSignalSpy>

#include <gtest/gtest.h>

using namespace parallax;
using namespace parallax::test;

namespace {

struct Document {
    QTemporaryDir dir;
    SpecFormModel model;
    SpecDocument document{&model};
    Document() { document.setSpec(tinySpec("doc")); }
    QString file(const QString& name) const { return dir.filePath(name); }
};

TEST(SpecDocument, KnowsItsFileAndTheRunItWasEditedFrom) {
    Document d;
    QSignalSpy changed(&d.document, &SpecDocument::sourcePathChanged);
    d.document.setSpec(tinySpec("from-file"), d.file(QStringLiteral("a.toml")));
    EXPECT_EQ(d.document.sourcePath(), d.file(QStringLiteral("a.toml")));
    EXPECT_EQ(d.model.spec().name, "from-file");
    ASSERT_EQ(changed.count(), 1);
    EXPECT_EQ(changed.first().at(0).toString(), d.file(QStringLiteral("a.toml")));

    d.document.editRun(tinySpec("failed"), 12);
    EXPECT_EQ(d.document.editedRun(), 12);
    EXPECT_EQ(d.document.resumedRun(), 0);
    EXPECT_TRUE(d.document.sourcePath().isEmpty()) << "the spec of a run has no file";
    EXPECT_TRUE(d.document.resumeDifferences().isEmpty());

    // Another spec ends the editing; so does a launch, which keeps the edits with the run.
    d.document.setSpec(tinySpec("other"));
    EXPECT_EQ(d.document.editedRun(), 0);
    d.document.editRun(tinySpec("failed"), 12);
    d.model.setField(QStringLiteral("train.steps"), qlonglong(99));
    ASSERT_TRUE(d.model.isModified());
    d.document.markLaunched();
    EXPECT_EQ(d.document.editedRun(), 0);
    EXPECT_FALSE(d.model.isModified());
}

TEST(SpecDocument, SaysWhatAResumeChangesAndWhatTheCheckpointRefuses) {
    Document d;
    d.document.resumeRun(tinySpec("base"), 4);
    EXPECT_EQ(d.document.resumedRun(), 4);
    EXPECT_EQ(d.document.resumeDifferences(),
              QStringLiteral("Resuming run #4 from its last checkpoint with its own spec; change the layout, hosts or "
                             "devices, then Resume."));
    EXPECT_FALSE(d.document.resumeRefused());

    // Another layout: listed, and the checkpoint takes it.
    d.model.setField(QStringLiteral("parallel.dp"), qlonglong(1));
    EXPECT_EQ(d.document.resumeDifferences(),
              QStringLiteral("Resuming run #4 from its last checkpoint with: parallel.dp: 2 → 1"));
    EXPECT_TRUE(d.document.resumeBlocker().isEmpty());

    // Another model: the checkpoint cannot be loaded, which blocks the launch.
    d.model.setField(QStringLiteral("model.dim"), qlonglong(96));
    EXPECT_TRUE(d.document.resumeRefused());
    EXPECT_TRUE(d.document.resumeDifferences().contains(QStringLiteral("\nError: model.dim = 96, but the checkpoint of run 4")))
        << d.document.resumeDifferences().toStdString();
    EXPECT_TRUE(d.document.resumeBlocker().startsWith(QStringLiteral("The checkpoint of run #4 cannot be loaded into this spec: model.dim = 96")))
        << d.document.resumeBlocker().toStdString();

    // Numbers that differ from the run's are a warning only.
    d.model.setField(QStringLiteral("model.dim"), QVariant());
    d.model.setField(QStringLiteral("train.lr"), 1e-2);
    EXPECT_FALSE(d.document.resumeRefused());
    EXPECT_TRUE(d.document.resumeDifferences().contains(QStringLiteral("\nWarning: train.lr = ")))
        << d.document.resumeDifferences().toStdString();
}

TEST(SpecDocument, ReadsAFileKeepingUnknownKeysAndNamesWhatCannotBeRead) {
    Document d;
    const QString path = d.file(QStringLiteral("with-unknown.toml"));
    {
        QFile f(path);
        ASSERT_TRUE(f.open(QIODevice::WriteOnly));
        f.write("stpes = 3\n" + QByteArray::fromStdString(toToml(tinySpec("read"))));
    }
    SpecDocument::Read read = SpecDocument::read(path);
    ASSERT_TRUE(read.spec) << read.message.toStdString();
    EXPECT_EQ(read.spec->name, "read");
    EXPECT_TRUE(read.message.startsWith(QStringLiteral("Loaded %1; kept 1 key(s) this version does not know:\n")
                                            .arg(QDir::toNativeSeparators(path))))
        << read.message.toStdString();
    EXPECT_TRUE(read.message.contains(QStringLiteral("stpes")));

    const QString plain = d.file(QStringLiteral("plain.toml"));
    writeSpecFile(tinySpec("plain"), plain.toStdString());
    EXPECT_EQ(SpecDocument::read(plain).message, QStringLiteral("Loaded %1").arg(QDir::toNativeSeparators(plain)));

    // A file cut short mid-table: no spec, and the message names the file.
    const QString broken = d.file(QStringLiteral("broken.toml"));
    {
        QFile f(broken);
        ASSERT_TRUE(f.open(QIODevice::WriteOnly));
        f.write("[train\nsteps = 3\n");
    }
    read = SpecDocument::read(broken);
    EXPECT_FALSE(read.spec);
    EXPECT_TRUE(read.message.contains(QStringLiteral("broken.toml"))) << read.message.toStdString();
}

TEST(SpecDocument, SavesToAFileThatBecomesItsSource) {
    Document d;
    d.model.setField(QStringLiteral("train.steps"), qlonglong(33));
    QSignalSpy changed(&d.document, &SpecDocument::sourcePathChanged);
    const QString path = d.file(QStringLiteral("saved.toml"));
    QString message;
    ASSERT_TRUE(d.document.save(path, &message)) << message.toStdString();
    EXPECT_EQ(message, QStringLiteral("Saved %1").arg(QDir::toNativeSeparators(path)));
    EXPECT_EQ(d.document.sourcePath(), path);
    EXPECT_EQ(changed.count(), 1);
    EXPECT_FALSE(d.model.isModified());
    EXPECT_EQ(readSpecFile(path.toStdString()).train.steps, 33);

    // A folder that does not exist: not saved, the source stays.
    const QString nowhere = d.file(QStringLiteral("missing/folder/x.toml"));
    EXPECT_FALSE(d.document.save(nowhere, &message));
    EXPECT_TRUE(message.startsWith(QStringLiteral("Could not save %1: ").arg(nowhere))) << message.toStdString();
    EXPECT_EQ(d.document.sourcePath(), path);
}

TEST(SpecDocument, WritesTheLaunchSpecBesideTheStore) {
    Document d;
    QString error;
    EXPECT_TRUE(d.document.writeLaunchSpec(&error).isEmpty());
    EXPECT_EQ(error, QStringLiteral("No store is open; open one with File > Open store"));

    d.document.setStorePath(d.file(QStringLiteral("parallax.db")));
    const QString spec = d.document.writeLaunchSpec(&error);
    ASSERT_FALSE(spec.isEmpty()) << error.toStdString();
    EXPECT_EQ(QFileInfo(spec).absolutePath(), QFileInfo(d.file(QStringLiteral("specs"))).absoluteFilePath());
    EXPECT_TRUE(QFileInfo(spec).fileName().startsWith(QStringLiteral("doc-"))) << spec.toStdString();
    EXPECT_EQ(readSpecFile(spec.toStdString()).name, "doc");
    const QString line = d.document.launchCommandLine(spec, &error);
    EXPECT_TRUE(line.contains(QStringLiteral("parallax-worker"))) << line.toStdString() << error.toStdString();
    EXPECT_TRUE(line.contains(spec)) << line.toStdString();

    // A file where the specs folder belongs: the reason names the folder.
    Document blocked;
    QFile file(blocked.file(QStringLiteral("specs")));
    ASSERT_TRUE(file.open(QIODevice::WriteOnly));
    file.close();
    blocked.document.setStorePath(blocked.file(QStringLiteral("parallax.db")));
    EXPECT_TRUE(blocked.document.writeLaunchSpec(&error).isEmpty());
    EXPECT_TRUE(error.startsWith(QStringLiteral("Could not create "))) << error.toStdString();
}

TEST(SpecPresets, OffersTheQuickStartFirstThenByName) {
    const QMap<QString, QString> files = {{QStringLiteral("b"), QStringLiteral("/b.toml")},
                                          {QStringLiteral("quickstart"), QStringLiteral("/q.toml")},
                                          {QStringLiteral("a"), QStringLiteral("/a.toml")}};
    EXPECT_EQ(SpecPresets::names(files), (QStringList{"quickstart", "a", "b"}));
    EXPECT_EQ(SpecPresets::names({{QStringLiteral("b"), QStringLiteral("/b.toml")}}), QStringList{"b"});
    // The example runs of this tree are found from the test's executable.
    const QMap<QString, QString> found = SpecPresets::files();
    ASSERT_TRUE(found.contains(QStringLiteral("quickstart")));
    EXPECT_TRUE(QFileInfo(found.value(QStringLiteral("quickstart"))).isFile());
}

} // namespace
