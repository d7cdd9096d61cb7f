#pragma once

#include "core/store/RunStore.h"

#include <QObject>
#include <QPointer>
#include <QString>
#include <QThread>

#include <functional>
#include <memory>
#include <utility>

namespace parallax {

// A thread with its own connection to the store, for the reads and writes the console makes
// besides polling (editing notes, deleting a run, loading the runs to compare), so that none of
// them waits on SQLite in the GUI thread. Jobs run one after another in the order given.
class RunStoreThread : public QObject {
    Q_OBJECT
public:
    explicit RunStoreThread(const QString& storePath, QObject* parent = nullptr);
    ~RunStoreThread() override; // finishes the queued jobs, then stops

    QString storePath() const { return m_path; }

    // Runs `job` on the store's thread, then `done` with its result in `context`'s thread (not
    // at all when `context` is gone by then). A job that throws reports failed() instead.
    template <typename Result>
    void query(QObject* context, std::function<Result(RunStore&)> job, std::function<void(Result)> done) {
        QPointer<QObject> guard(context);
        post([this, guard, job = std::move(job), done = std::move(done)](RunStore& store) {
            auto result = std::make_shared<Result>(job(store));
            if (!guard) return;
            QMetaObject::invokeMethod(
                guard.data(), [guard, done, result] { if (guard && done) done(std::move(*result)); },
                Qt::QueuedConnection);
        });
    }

    // Runs a write on the store's thread; then the written() signal and `done` (if given) in
    // `context`'s thread. A job that throws calls `error` there instead (and reports failed()).
    void write(std::function<void(RunStore&)> job, QObject* context = nullptr, std::function<void()> done = {},
               std::function<void(const QString&)> error = {});

    // Blocks until every job given so far has run (for tests and shutdown).
    void waitForIdle();

signals:
    void failed(const QString& message);
    void written();

private:
    void post(std::function<void(RunStore&)> job);

    QString m_path;
    QThread m_thread;
    QObject m_worker; // lives in m_thread; jobs are queued to it
    std::unique_ptr<RunStore> m_store; // opened on first use, in m_thread
};

} // namespace parallax
