#include "BrowseTestSupport.h"

#include "ui/models/SpecFormModel.h"

#include <QDir>
#include <QFile>
#include <QTemporaryDir>

#include <gtest/gtest.h>

using namespace parallax;
using namespace parallax::test;

namespace {

QString writeFile(const QTemporaryDir& dir, const QString& name, const QByteArray& text) {
    const QString path = dir.filePath(name);
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly) || f.write(text) != text.size()) return {};
    return path;
}

} // namespace

TEST(SpecFormModelReadFile, ReadsASpecAndNamesTheKeysThisVersionDoesNotKnow) {
    QTemporaryDir dir;
    const QString path = writeFile(dir, QStringLiteral("run.toml"),
                                   "name = \"loaded\"\n[train]\nsteps = 77\nfuture_knob = 3\n[parallel]\ndp = 2\n");
    const SpecFormModel::SpecFile read = SpecFormModel::readFile(path);
    ASSERT_TRUE(read.spec.has_value()) << read.error.toStdString();
    EXPECT_TRUE(read.error.isEmpty());
    EXPECT_EQ(read.spec->name, "loaded");
    EXPECT_EQ(read.spec->train.steps, 77);
    EXPECT_EQ(read.spec->parallel.dp, 2);
    ASSERT_EQ(read.unknown.size(), 1u);
    EXPECT_NE(read.unknown[0].message.find("run.toml:4"), std::string::npos) << read.unknown[0].message;
    EXPECT_NE(read.unknown[0].message.find("future_knob"), std::string::npos) << read.unknown[0].message;
    EXPECT_NE(read.spec->preserved_toml.find("future_knob"), std::string::npos);
}

TEST(SpecFormModelReadFile, AnUnreadableSpecNamesTheFileAndTheLine) {
    QTemporaryDir dir;
    const QString path = writeFile(dir, QStringLiteral("bad.toml"), "name = \"x\"\n[train]\nsteps = \"ten\"\n");
    const SpecFormModel::SpecFile read = SpecFormModel::readFile(path);
    EXPECT_FALSE(read.spec.has_value());
    EXPECT_TRUE(read.unknown.empty());
    EXPECT_TRUE(read.error.startsWith(QStringLiteral("bad.toml:3"))) << read.error.toStdString();
    EXPECT_TRUE(read.error.contains(QStringLiteral("train.steps must be an integer"))) << read.error.toStdString();

    const QString syntax = writeFile(dir, QStringLiteral("syntax.toml"), "[train\nsteps = 3\n");
    const SpecFormModel::SpecFile broken = SpecFormModel::readFile(syntax);
    EXPECT_FALSE(broken.spec.has_value());
    EXPECT_TRUE(broken.error.startsWith(QStringLiteral("syntax.toml:1"))) << broken.error.toStdString();
}

TEST(SpecFormModelReadFile, AMissingFileSaysWhichPath) {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("nowhere.toml"));
    const SpecFormModel::SpecFile read = SpecFormModel::readFile(path);
    EXPECT_FALSE(read.spec.has_value());
    EXPECT_TRUE(read.error.startsWith(path + QStringLiteral(": cannot be read"))) << read.error.toStdString();
}

TEST(SpecFormModelReadFile, ReadsThePresetsCompiledIn) {
    const SpecFormModel::SpecFile read = SpecFormModel::readFile(QStringLiteral(":/runs/quickstart.toml"));
    ASSERT_TRUE(read.spec.has_value()) << read.error.toStdString();
    EXPECT_EQ(read.spec->name, "quickstart");
}

// The console reads a spec through the same reader as parallax-cli: a spec 30,000 levels deep (which
// once crashed the TOML library) and an endless file are refused with the limit named.
TEST(SpecFormModelReadFile, ASpecTooDeepOrTooLargeIsRefusedNamingTheLimit) {
    QTemporaryDir dir;
    QByteArray text = "name = \"deep\"\n[d";
    for (int i = 1; i < 30000; ++i) text += ".d";
    text += "]\n";
    const SpecFormModel::SpecFile deep = SpecFormModel::readFile(writeFile(dir, QStringLiteral("deep.toml"), text));
    EXPECT_FALSE(deep.spec.has_value());
    EXPECT_TRUE(deep.error.startsWith(QStringLiteral("deep.toml:2: the TOML nests deeper than 64 levels")))
        << deep.error.toStdString();

    const SpecFormModel::SpecFile endless = SpecFormModel::readFile(QStringLiteral("/dev/zero"));
    EXPECT_FALSE(endless.spec.has_value());
    EXPECT_TRUE(endless.error.contains(QStringLiteral("is larger than 4 MiB"))) << endless.error.toStdString();
}
