#include "ui/models/RunStoreThread.h"

#include <QSemaphore>

#include <exception>

namespace parallax {

RunStoreThread::RunStoreThread(const QString& storePath, QObject* parent) : QObject(parent), m_path(storePath) {
    m_thread.setObjectName(QStringLiteral("store"));
    m_worker.moveToThread(&m_thread);
    m_thread.start();
}

RunStoreThread::~RunStoreThread() {
    waitForIdle();
    // The connection belongs to the thread that used it.
    QMetaObject::invokeMethod(&m_worker, [this] { m_store.reset(); }, Qt::BlockingQueuedConnection);
    m_thread.quit();
    m_thread.wait();
}

void RunStoreThread::post(std::function<void(RunStore&)> job) {
    QMetaObject::invokeMethod(
        &m_worker,
        [this, job = std::move(job)] {
            try {
                if (!m_store) m_store = std::make_unique<RunStore>(m_path.toStdString());
                job(*m_store);
            } catch (const std::exception& e) {
                emit failed(QString::fromStdString(e.what()));
            }
        },
        Qt::QueuedConnection);
}

void RunStoreThread::write(std::function<void(RunStore&)> job, QObject* context, std::function<void()> done,
                           std::function<void(const QString&)> error) {
    QPointer<QObject> guard(context);
    post([this, guard, job = std::move(job), done = std::move(done), error = std::move(error)](RunStore& store) {
        try {
            job(store);
        } catch (const std::exception& e) {
            const QString message = QString::fromStdString(e.what());
            if (guard && error)
                QMetaObject::invokeMethod(guard.data(), [guard, error, message] { if (guard) error(message); },
                                          Qt::QueuedConnection);
            throw;
        }
        emit written();
        if (guard && done) QMetaObject::invokeMethod(guard.data(), [guard, done] { if (guard) done(); },
                                                     Qt::QueuedConnection);
    });
}

void RunStoreThread::waitForIdle() {
    if (QThread::currentThread() == &m_thread) return;
    QSemaphore done;
    QMetaObject::invokeMethod(&m_worker, [&done] { done.release(); }, Qt::QueuedConnection);
    done.acquire();
}

} // namespace parallax
