#include "core/store/LogIndexer.h"

#include "core/store/LogIndex.h"
#include "core/store/RunStore.h"

#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <optional>

namespace parallax {

namespace {

// How long a LogIndexer being destroyed keeps indexing a backlog (one that a deleted index file
// or a long-stopped indexer left) before it leaves the rest to the next search.
constexpr std::chrono::seconds kFinishWithin{3};

} // namespace

LogIndexer::LogIndexer(std::string storePath, int64_t run) : m_path(std::move(storePath)), m_run(run) {
    // The thread inherits the signal mask it is created with: all blocked from its first
    // instruction, so that a process-directed signal always goes to a thread that expects it.
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    try {
        m_thread = std::thread([this] { loop(); });
    } catch (...) {
        pthread_sigmask(SIG_SETMASK, &previous, nullptr);
        throw;
    }
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
}

LogIndexer::~LogIndexer() {
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_stopping = true;
    }
    m_cv.notify_all();
    m_thread.join();
}

void LogIndexer::wake() {
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        ++m_asked;
    }
    m_cv.notify_all();
}

bool LogIndexer::wait() {
    std::unique_lock<std::mutex> lock(m_mutex);
    const uint64_t target = m_asked;
    m_cv.wait(lock, [&] { return m_handled >= target; });
    return !m_failed;
}

void LogIndexer::loop() {
    std::unique_lock<std::mutex> lock(m_mutex);
    for (;;) {
        m_cv.wait(lock, [&] { return m_asked > m_handled || m_stopping; });
        if (m_asked == m_handled) break; // stopping, with nothing left to do
        // Every wake() so far is served by one catching up: it indexes every line committed
        // before it starts.
        const uint64_t target = m_asked;
        lock.unlock();
        const bool ok = catchUp();
        lock.lock();
        m_handled = target;
        m_failed = !ok;
        m_cv.notify_all();
    }
    m_store.reset(); // closed on the thread that used it
}

bool LogIndexer::catchUp() {
    using Clock = std::chrono::steady_clock;
    try {
        if (!m_store) m_store = std::make_unique<RunStore>(m_path);
        std::optional<Clock::time_point> giveUpAt;
        // One batch per call, to notice a stop request in between.
        while (!m_store->indexLogs(m_run, LogIndex::kBatchLines)) {
            std::lock_guard<std::mutex> lock(m_mutex);
            if (!m_stopping) continue;
            if (!giveUpAt) giveUpAt = Clock::now() + kFinishWithin;
            else if (Clock::now() >= *giveUpAt) break;
        }
        m_reported = false;
        return true;
    } catch (const std::exception& e) {
        if (!m_reported) {
            std::fprintf(stderr,
                         "parallax: cannot index the log lines of run %lld for search: %s; the lines "
                         "are in the store, and the next search indexes them\n",
                         static_cast<long long>(m_run), e.what());
            m_reported = true;
        }
        return false;
    }
}

} // namespace parallax
