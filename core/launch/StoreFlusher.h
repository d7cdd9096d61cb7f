#pragma once

#include "core/launch/NoticeSink.h"
#include "core/launch/RawOutput.h"
#include "core/launch/RunOutcome.h"
#include "core/store/BatchedWriter.h"

#include <chrono>
#include <functional>
#include <memory>
#include <string>

namespace parallax {

class OutputRouter;

// Gets one run's rows into its store, whatever the store does meanwhile:
//  - rows go through a BatchedWriter; a store that refuses them (locked by others, full) keeps
//    them waiting in memory, then, past the OutputRouter's spool limit, in output.log only, and
//    once the store takes rows again the spooled lines are imported from output.log, a bounded
//    piece per flush so that the supervising loop goes on meanwhile; both are said;
//  - a damaged store (StoreDamaged: no retry cures it) is said once on the terminal and handed
//    to the damage handler, which stops the run; nothing more is written to it;
//  - at the run's end, the rows and the end are written once the store takes them, however
//    long that takes; only a stop request gives up, leaving the rows to `parallax-cli import`.
class StoreFlusher {
public:
    StoreFlusher(RunStore& store, int64_t runId, std::string host, NoticeSink& notices);
    ~StoreFlusher();

    BatchedWriter& writer() { return *m_writer; }
    // The router whose spool (output.log) holds the lines the store refused (null: none).
    void setRouter(OutputRouter* router) { m_router = router; }
    void setRunDir(std::string runDir) { m_runDir = std::move(runDir); }
    // Called once, with SQLite's words, when the store turns out damaged.
    void setDamageHandler(std::function<void(const std::string&)> handler) { m_onDamage = std::move(handler); }

    // A row for the next flush; a failure of the writer's own flush is reported, never thrown.
    template <class Row>
    void add(const Row& row) {
        try {
            m_writer->add(row);
        } catch (const std::exception& e) {
            reportError(e);
        }
    }
    // While the ranks run a locked store may hold the loop up only briefly per attempt.
    void beginLive();
    // Writes what is due (`force`: everything pending) and, once the store takes rows again after
    // refusing them, imports the spooled lines and says so.
    void flush(bool force);
    void reportError(const std::exception& e);

    bool damaged() const { return !m_damage.empty(); }
    // The StoreDamaged that ends the supervisor: what SQLite said, how the run ended, and how its
    // folder brings it back into a new store.
    StoreDamaged damagedError(const RunOutcome& outcome) const;

    // The run's end: its rows and its end written, waiting for the store as long as it takes
    // (`stopRequested` is asked between attempts: a request gives up with StoreError). Returns
    // the run's record. Throws damagedError() when the store is damaged.
    RunRecord finishRun(const RunOutcome& outcome, double endedAt, const std::function<bool()>& stopRequested);

private:
    void afterWrite();
    void importSpool();
    void onDamaged(const std::string& what);
    void remarkLateEnd(std::chrono::steady_clock::duration waited);

    RunStore& m_store;
    int64_t m_runId;
    std::string m_host;
    NoticeSink& m_notices;
    std::unique_ptr<BatchedWriter> m_writer;
    OutputRouter* m_router = nullptr;
    std::string m_runDir;
    std::function<void(const std::string&)> m_onDamage;
    bool m_errorReported = false;
    std::string m_refusal; // the first error of the store's current refusal, and since when
    double m_refusedSince = 0;
    std::string m_damage;  // the store's file is damaged: what SQLite said
    size_t m_spoolImported = 0; // rows imported from output.log since the router began to spool
    std::unique_ptr<RawOutputReader> m_spoolReader; // where the spool's import stopped, kept between turns
};

} // namespace parallax
