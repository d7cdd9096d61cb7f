#include "ui/models/CacheRunner.h"

namespace parallax {

CacheRunner::CacheRunner(QObject* parent) : ProbeCommand(parent) {
    // parallax-cache says how far it is on standard output, and why it stopped on standard error.
    setMergedOutput(true);
}

QStringList CacheRunner::arguments(const QString& specPath, bool cuda) {
    QStringList args{QStringLiteral("cache"), specPath};
    if (cuda) args << QStringLiteral("--device") << QStringLiteral("cuda");
    return args;
}

void CacheRunner::start(const QString& specPath, bool cuda) {
    startCommand(arguments(specPath, cuda), {0});
}

void CacheRunner::answered(int, const QString& output) {
    QString folderLine;
    for (const QString& line : output.split(QChar('\n'), Qt::SkipEmptyParts))
        if (!line.startsWith(QLatin1String("bucket ")) && !line.startsWith(QLatin1String("cache: "))) folderLine = line;
    emit finished(folderLine.trimmed());
}

} // namespace parallax
