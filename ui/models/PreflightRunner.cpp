#include "ui/models/PreflightRunner.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QThread>

#include <exception>
#include <memory>

namespace parallax {

PreflightRunner::PreflightRunner(QObject* parent) : QObject(parent), m_check(&preflight) {}

void PreflightRunner::setCheck(Check check) {
    m_check = check ? std::move(check) : Check(&preflight);
}

bool PreflightRunner::start(const ClusterProfile& profile, const PreflightOptions& options) {
    if (m_running) return false;
    m_running = true;
    auto result = std::make_shared<Result>();
    result->profile = profile;
    QThread* thread = QThread::create([result, options, check = m_check] {
        QElapsedTimer clock;
        clock.start();
        PreflightOptions o = options;
        try {
            if (!o.local_worker.empty() && QFileInfo(QString::fromStdString(o.local_worker)).isFile())
                result->localBuild = o.local_build.empty() ? workerBuild(o.local_worker) : o.local_build;
            o.local_build = result->localBuild;
            if (!o.shared_folder.empty()) {
                const QString folder = QString::fromStdString(o.shared_folder);
                // Private, as the supervisor makes it: checkpoints and outputs are the user's.
                if (!QFileInfo(folder).isDir() && QDir().mkpath(folder))
                    QFile::setPermissions(folder, QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
            }
            result->checks = check(result->profile, o);
        } catch (const std::exception& e) {
            result->error = QString::fromStdString(e.what());
        }
        result->seconds = double(clock.elapsed()) / 1000.0;
        result->finishedAt = QDateTime::currentDateTime();
    });
    thread->setObjectName(QStringLiteral("Preflight"));
    // `finished` is emitted on the check's thread; with this object as context the result arrives
    // queued, on this object's thread, and not at all once this object is gone.
    connect(thread, &QThread::finished, this, [this, result] {
        m_running = false;
        emit finished(*result);
    });
    connect(thread, &QThread::finished, thread, &QObject::deleteLater);
    thread->start();
    return true;
}

} // namespace parallax
