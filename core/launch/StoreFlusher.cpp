#include "core/launch/StoreFlusher.h"

#include "core/launch/RawOutput.h"

#include "core/launch/OutputImport.h"
#include "core/launch/OutputRouter.h"
#include "core/launch/RunNotices.h"

#include <algorithm>
#include <iostream>
#include <thread>

namespace parallax {

namespace {

using Clock = std::chrono::steady_clock;

// While the ranks run, a store locked by someone else may hold the read loop up for this long per
// attempt (the ranks block once their output pipes fill), and the rows wait this long between
// attempts; once the run has ended, the supervisor waits for the store as long as it takes.
constexpr int kLiveBusyTimeoutMs = 250;
constexpr auto kLiveRetryAfter = std::chrono::seconds(2);
constexpr int kEndBusyTimeoutMs = 15000;
constexpr auto kEndRetryAfter = std::chrono::seconds(1);
constexpr int64_t kImportPerTurn = 8 << 20; // bytes of spooled output imported per flush

double wallNow() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

} // namespace

StoreFlusher::StoreFlusher(RunStore& store, int64_t runId, std::string host, NoticeSink& notices)
    : m_store(store), m_runId(runId), m_host(std::move(host)), m_notices(notices),
      m_writer(std::make_unique<BatchedWriter>(store, runId)) {
    m_writer->setRetryAfter(kLiveRetryAfter);
}

StoreFlusher::~StoreFlusher() = default;

void StoreFlusher::beginLive() { m_store.setBusyTimeout(kLiveBusyTimeoutMs); }

void StoreFlusher::reportError(const std::exception& e) {
    if (dynamic_cast<const StoreDamaged*>(&e)) {
        onDamaged(e.what());
        return;
    }
    // The writer keeps rows it could not write; the next flush tries again.
    if (m_errorReported)
        return;
    m_refusal = e.what();
    m_refusedSince = wallNow();
    std::cerr << "parallax: run " << m_runId << ": writing to " << m_store.path() << " failed (" << e.what()
              << "); rows are kept and written when the store accepts them\n";
    m_errorReported = true;
}

// No retry cures a damaged store: the damage handler has the ranks checkpoint and stop, and the
// supervisor ends with damagedError(). Every line stays in output.log.
void StoreFlusher::onDamaged(const std::string& what) {
    if (!m_damage.empty())
        return;
    m_damage = what;
    std::cerr << "parallax: run " << m_runId << ": " << what << "\nparallax: run " << m_runId
              << " is being stopped: its ranks checkpoint and stop; its output stays in " << rawOutputPath(m_runDir)
              << "\n";
    if (m_onDamage)
        m_onDamage(what);
}

StoreDamaged StoreFlusher::damagedError(const RunOutcome& o) const {
    return StoreDamaged(m_damage + ". Run " + std::to_string(m_runId) + " " + runStateName(o.state) +
                        (o.reason.empty() ? std::string() : " (" + o.reason + ")") +
                        "; none of it after the damage was recorded: its spec and whole output are in " + m_runDir +
                        ", which parallax-cli --store NEW.db import " + m_runDir + " brings into a new store");
}

void StoreFlusher::flush(bool force) {
    if (damaged())
        return;
    try {
        if (force)
            m_writer->flush();
        else
            m_writer->maybeFlush();
        afterWrite();
    } catch (const std::exception& e) {
        reportError(e);
    }
}

// After a failed write: says once that the store takes rows again, and imports what was only
// spooled to output.log meanwhile.
void StoreFlusher::afterWrite() {
    if (m_writer->pendingRows() != 0 || m_writer->failingSince())
        return;
    if (m_router && m_router->spooling()) {
        importSpool();
        if (m_router->spooling())
            return;
    }
    if (!m_errorReported)
        return;
    m_errorReported = false;
    std::cerr << "parallax: run " << m_runId << ": " << m_store.path() << " takes rows again\n";
    // Said on the terminal while the store refused rows; now the run's log keeps it too.
    m_notices.notice(LogLevel::Warn, "the store refused rows for " +
                                 std::to_string(static_cast<int>(wallNow() - m_refusedSince)) + " s (" + m_refusal +
                                 "); they were kept meanwhile and are all written now");
}

void StoreFlusher::importSpool() {
    m_router->flushRawLog();
    const std::optional<RunRecord> record = m_store.run(m_runId);
    if (!record)
        return;
    try {
        // From the store's offset, not the router's: an import cut short by the store committed
        // its first batches, and goes on after them. A bounded piece per turn of the loop, so that
        // the heartbeat and the pipes are served meanwhile; the router spools on until the import
        // has caught up.
        const int64_t from = m_store.outputOffset(m_runId).value_or(0);
        const int64_t to = std::min(m_router->rawBytes(), from + kImportPerTurn);
        const OutputImport done = importOutput(m_store, *record, from, to, &m_spoolReader);
        m_spoolImported += done.rows;
        if (done.to < m_router->rawBytes() && done.to > from)
            return;
        m_notices.notice(LogLevel::Warn, "the store refused rows for a while; " + std::to_string(m_spoolImported) +
                                     " row(s) kept meanwhile in output.log only were imported from it");
    } catch (const StoreError&) {
        throw;
    } catch (const std::exception& e) {
        m_notices.notice(LogLevel::Error, "lines kept in output.log while the store refused rows could not be imported: " +
                                      std::string(e.what()));
    }
    m_spoolImported = 0;
    m_spoolReader.reset();
    m_router->resumeStoring();
}

RunRecord StoreFlusher::finishRun(const RunOutcome& o, double endedAt, const std::function<bool()>& stopRequested) {
    if (damaged())
        throw damagedError(o);
    m_writer->setRetryAfter(kEndRetryAfter);
    const Clock::time_point waitStart = Clock::now();
    for (bool told = false;;) {
        if (told)
            m_store.setBusyTimeout(kEndBusyTimeoutMs); // the first attempt is quick, to say so at once
        try {
            m_writer->flush();
            // The ranks are done: the spooled lines are imported all at once, piece by piece.
            for (int64_t before = -1; m_router && m_router->spooling();) {
                const int64_t at = m_store.outputOffset(m_runId).value_or(0);
                if (at == before)
                    throw StoreError("the import of the rows kept in output.log makes no progress at byte " +
                                     std::to_string(at));
                before = at;
                afterWrite();
            }
            m_writer->flush(); // what the import said
            m_store.finishRun(m_runId, o.state, o.exit_code, o.reason, endedAt);
            break;
        } catch (const StoreDamaged& e) {
            onDamaged(e.what());
            throw damagedError(o);
        } catch (const StoreError& e) {
            if (!told)
                std::cerr << "parallax: run " << m_runId << " " << o.state << ", but " << m_store.path()
                          << " does not take its rows (" << e.what() << "); " << m_writer->pendingRows()
                          << " row(s) wait. Waiting for the store as long as it takes; a stop request "
                             "(Ctrl-C) leaves them for parallax-cli import "
                          << m_runId << "\n";
            told = true;
            if (stopRequested())
                throw StoreError("run " + std::to_string(m_runId) + " " + runStateName(o.state) + ", but its rows and its end "
                                 "were not written to " + m_store.path() + " (" + e.what() + "); they are in " +
                                 rawOutputPath(m_runDir) + ": run parallax-cli import " + std::to_string(m_runId) +
                                 " once the store takes writes again");
            std::this_thread::sleep_for(kEndRetryAfter);
        }
    }
    if (Clock::now() - waitStart > std::chrono::seconds(5))
        remarkLateEnd(Clock::now() - waitStart);
    const std::optional<RunRecord> record = m_store.run(m_runId);
    if (!record)
        throw StoreError("run " + std::to_string(m_runId) + " vanished from " + m_store.path() + " while it ran");
    return *record;
}

void StoreFlusher::remarkLateEnd(Clock::duration waited) {
    const std::string said = "the store took the run's last rows and its end " +
                             std::to_string(std::chrono::duration_cast<std::chrono::seconds>(waited).count()) +
                             " s after the run ended (it refused them meanwhile)";
    std::cerr << "parallax: run " << m_runId << ": " << said << "\n";
    try {
        m_store.insertLog(m_runId, RunNotices::row(m_host, LogLevel::Warn, said, wallNow()));
    } catch (const StoreError&) {
        // The run's end is recorded; this line is only a remark about it.
    }
}

} // namespace parallax
