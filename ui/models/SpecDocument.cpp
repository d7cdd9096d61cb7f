#include "ui/models/SpecDocument.h"

#include "core/launch/LaunchPlan.h"
#include "core/spec/SpecCompare.h"
#include "core/spec/SpecIO.h"
#include "core/spec/SpecOverrides.h"
#include "ui/models/SpecFormModel.h"

#include <QCoreApplication>
#include <QDateTime>
#include <QDir>
#include <QFileInfo>
#include <QStringList>

#include <stdexcept>

namespace parallax {

namespace {

QString q(const std::string& s) {
    return QString::fromStdString(s);
}

} // namespace

SpecDocument::SpecDocument(SpecFormModel* model, QObject* parent) : QObject(parent), m_model(model) {}

void SpecDocument::setSpec(const RunSpec& spec, const QString& sourcePath) {
    m_editedRun = 0;
    m_resumedRun = 0;
    m_sourcePath = sourcePath;
    m_model->setSpec(spec);
    emit sourcePathChanged(sourcePath);
}

void SpecDocument::editRun(const RunSpec& spec, qint64 fromRun) {
    setSpec(spec);
    m_editedRun = fromRun;
}

void SpecDocument::resumeRun(const RunSpec& spec, qint64 fromRun) {
    setSpec(spec);
    m_resumedRun = fromRun;
    m_resumedSpec = spec;
}

void SpecDocument::markLaunched() {
    m_editedRun = 0;
    m_resumedRun = 0;
    m_model->markSaved();
}

QString SpecDocument::resumeDifferences() const {
    if (m_resumedRun <= 0) return {};
    const RunSpec& now = m_model->spec();
    QStringList changed;
    for (const SpecDifference& d : specDifferences(m_resumedSpec, now))
        changed << tr("%1: %2 → %3").arg(q(d.field), q(d.left), q(d.right));
    QString text = changed.isEmpty()
                       ? tr("Resuming run #%1 from its last checkpoint with its own spec; change the layout, hosts or "
                            "devices, then Resume.").arg(m_resumedRun)
                       : tr("Resuming run #%1 from its last checkpoint with: %2").arg(m_resumedRun).arg(changed.join(QStringLiteral("; ")));
    for (const SpecIssue& issue : resumeIssues(m_resumedSpec, now, m_resumedRun))
        text += QLatin1Char('\n') + (issue.warning ? tr("Warning: ") : tr("Error: ")) + q(issue.message);
    return text;
}

bool SpecDocument::resumeRefused() const {
    return !resumeBlocker().isEmpty();
}

QString SpecDocument::resumeBlocker() const {
    if (m_resumedRun <= 0) return {};
    QString why;
    for (const SpecIssue& issue : resumeIssues(m_resumedSpec, m_model->spec(), m_resumedRun))
        if (!issue.warning)
            why = tr("The checkpoint of run #%1 cannot be loaded into this spec: %2").arg(m_resumedRun).arg(q(issue.message));
    return why;
}

SpecDocument::Read SpecDocument::read(const QString& path) {
    SpecFormModel::SpecFile file = SpecFormModel::readFile(path);
    if (!file.spec) return {std::nullopt, file.error};
    const QString where = QDir::toNativeSeparators(path);
    if (file.unknown.empty()) return {std::move(file.spec), tr("Loaded %1").arg(where)};
    QStringList lines;
    for (const SpecIssue& issue : file.unknown) lines << q(issue.message);
    return {std::move(file.spec), tr("Loaded %1; kept %2 key(s) this version does not know:\n%3")
                                      .arg(where)
                                      .arg(file.unknown.size())
                                      .arg(lines.join(QChar('\n')))};
}

bool SpecDocument::save(const QString& path, QString* message) {
    try {
        writeSpecFile(m_model->spec(), path.toStdString());
    } catch (const std::exception& e) {
        if (message) *message = tr("Could not save %1: %2").arg(path, q(e.what()));
        return false;
    }
    m_sourcePath = path;
    m_model->markSaved();
    emit sourcePathChanged(path);
    if (message) *message = tr("Saved %1").arg(QDir::toNativeSeparators(path));
    return true;
}

void SpecDocument::forgetSource() {
    m_sourcePath.clear();
}

QString SpecDocument::writeLaunchSpec(QString* error) const {
    if (m_storePath.isEmpty()) {
        if (error) *error = tr("No store is open; open one with File > Open store");
        return {};
    }
    const QDir dir(QFileInfo(m_storePath).absoluteDir().filePath(QStringLiteral("specs")));
    if (!dir.exists() && !QDir().mkpath(dir.path())) {
        if (error) *error = tr("Could not create %1 for the run's spec; check the store folder's permissions").arg(dir.path());
        return {};
    }
    const QString stamp = QDateTime::currentDateTime().toString(QStringLiteral("yyyyMMdd-HHmmss-zzz"));
    QString name = q(m_model->spec().name);
    if (name.isEmpty()) name = QStringLiteral("run");
    const QString path = dir.filePath(name + QChar('-') + stamp + QStringLiteral(".toml"));
    try {
        writeSpecFile(m_model->spec(), path.toStdString());
    } catch (const std::exception& e) {
        if (error) *error = tr("Could not write the spec to %1: %2").arg(path, q(e.what()));
        return {};
    }
    return path;
}

QString SpecDocument::launchCommandLine(const QString& specPath, QString* error) const {
    LaunchContext context;
    const QDir app(QCoreApplication::applicationDirPath());
    context.worker = app.filePath(QStringLiteral("parallax-worker")).toStdString();
    context.spec_path = specPath.toStdString();
    // Outside a supervisor the run has no id: its folder is named after the spec file.
    context.run_dir = QFileInfo(m_storePath)
                          .absoluteDir()
                          .filePath(QStringLiteral("runs/") + QFileInfo(specPath).completeBaseName())
                          .toStdString();
    try {
        return q(makeLaunchPlan(m_model->spec(), context).commandLine());
    } catch (const std::exception& e) {
        if (error) *error = q(e.what());
        return {};
    }
}

} // namespace parallax
