#include "ui/models/ModelExportRunner.h"

#include <QDir>
#include <QFileInfo>

namespace parallax {

ModelExportRunner::ModelExportRunner(QObject* parent) : ProbeCommand(parent) {
    // parallax-export says how far it is on standard output, and why it stopped on standard error.
    setMergedOutput(true);
}

QString ModelExportRunner::folderProblem(const QString& folder) {
    if (folder.trimmed().isEmpty()) return tr("Name the folder to write");
    if (QDir::isRelativePath(folder)) return tr("%1 is a relative path; name the folder by its full path").arg(folder);
    const QFileInfo info(folder);
    if (info.exists() && !info.isDir()) return tr("%1 is a file; export writes a folder (name a new one)").arg(folder);
    if (info.isDir() && !QDir(folder).isEmpty(QDir::AllEntries | QDir::NoDotAndDotDot | QDir::Hidden | QDir::System))
        return tr("%1 already holds files; export writes a new or empty folder (name another, or empty it)").arg(folder);
    return {};
}

QStringList ModelExportRunner::arguments(qint64 runId, const QString& folder, Content content) {
    QStringList args{QStringLiteral("export"), QString::number(runId), QStringLiteral("-o"), folder};
    if (content == Content::Merged) args << QStringLiteral("--merge");
    return args;
}

void ModelExportRunner::start(qint64 runId, const QString& folder, Content content) {
    if (!isRunning()) {
        m_runId = runId;
        m_folder = folder;
    }
    startCommand(arguments(runId, folder, content), {0});
}

void ModelExportRunner::answered(int, const QString& output) {
    const QStringList lines = output.split(QChar('\n'), Qt::SkipEmptyParts);
    emit finished(m_runId, m_folder, lines.isEmpty() ? QString() : lines.last().trimmed());
}

} // namespace parallax
