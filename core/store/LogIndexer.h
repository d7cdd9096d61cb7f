#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace parallax {

class RunStore;

// Keeps one run's log lines in the store's full-text index while they stream in: a thread with
// its own RunStore on the store's file (RunStore is one per thread) catches the run up
// (RunStore::indexLogs) whenever wake() says lines were committed. Indexing takes the log index's
// write lock only, so the rows' writer never waits for it, and on two cores both proceed at once.
//
// A failure is reported on stderr once (until indexing works again) and never thrown: the
// lines stay in the store and the next search indexes them. The thread blocks signals, so that
// SIGTERM and the like reach the thread that handles them.
class LogIndexer {
public:
    LogIndexer(std::string storePath, int64_t run);
    // Finishes the catching up asked for so far, giving up after a few seconds (a search does
    // the rest), then joins the thread.
    ~LogIndexer();
    LogIndexer(const LogIndexer&) = delete;
    LogIndexer& operator=(const LogIndexer&) = delete;

    // Lines of the run were committed: index them soon. Cheap; never blocks on the store.
    void wake();
    // Waits until the lines committed before the last wake() are indexed. Returns false when
    // that catching up failed (already reported).
    bool wait();

private:
    void loop();
    bool catchUp(); // false on failure

    std::string m_path;
    int64_t m_run;
    std::unique_ptr<RunStore> m_store; // the thread's own, opened there

    std::mutex m_mutex;
    std::condition_variable m_cv;
    uint64_t m_asked = 0;   // wake() calls so far
    uint64_t m_handled = 0; // wakes whose lines are indexed (or whose catching up failed)
    bool m_failed = false;  // the last catching up failed
    bool m_reported = false;
    bool m_stopping = false;
    std::thread m_thread; // last: starts once the members above exist
};

} // namespace parallax
