#include "ui/models/SpecPresets.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>

namespace parallax {

QStringList SpecPresets::directories() {
    QStringList out;
    const QDir app(QCoreApplication::applicationDirPath());
    // The source tree above a build folder (build/<preset>/app/parallax), then installed copies.
    QStringList candidates = {app.filePath(QStringLiteral("../../resources/runs"))};
    QDir up = app;
    for (int level = 0; level < 6 && up.cdUp(); ++level) candidates << up.filePath(QStringLiteral("resources/runs"));
    candidates << app.filePath(QStringLiteral("../share/parallax/runs"));
    for (const QString& c : candidates) {
        const QString clean = QDir::cleanPath(c);
        if (QFileInfo(clean).isDir() && !out.contains(clean)) out << clean;
    }
    out << QStringLiteral(":/runs");
    return out;
}

QMap<QString, QString> SpecPresets::files() {
    QMap<QString, QString> out;
    for (const QString& dir : directories()) {
        const QFileInfoList files = QDir(dir).entryInfoList({QStringLiteral("*.toml")}, QDir::Files, QDir::Name);
        if (files.isEmpty()) continue;
        for (const QFileInfo& f : files) out.insert(f.completeBaseName(), f.absoluteFilePath());
        break;
    }
    return out;
}

QStringList SpecPresets::names(const QMap<QString, QString>& files) {
    const QString first = QStringLiteral("quickstart");
    QStringList out;
    if (files.contains(first)) out << first;
    for (auto it = files.begin(); it != files.end(); ++it)
        if (it.key() != first) out << it.key();
    return out;
}

} // namespace parallax
