#pragma once

#include "core/store/RunStore.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace parallax {

class RawOutputReader;

// Rebuilds a run's rows from its output.log, the raw copy of everything its launcher printed, for
// the part of the file whose rows never reached the store (RunStore::outputOffset tells where that
// part starts): the supervisor was killed while the store was locked, or it spooled lines to the
// file while the store refused rows. The lines go through the same OutputRouter as when the run
// was live; each batch of rows is committed together with the offset it reaches, so an import
// that is interrupted resumes where it stopped and no row is ever imported twice.
struct OutputImport {
    int64_t from = 0;       // bytes of output.log imported: [from, to)
    int64_t to = 0;
    int64_t file_bytes = 0; // bytes read: the file's size when imported to its end; past `to` only
                            // an unfinished last line
    size_t rows = 0;        // rows added to the store
    std::optional<RunEndEvent> run_end;
    std::optional<StepEvent> last_step;
};

// Imports the complete lines of `run`'s output.log from `from` up to `to` (-1: the end). Throws
// std::runtime_error when the file cannot be read, StoreError when the store refuses the rows.
// `reader`, when given, keeps the file open between imports of a file that grows: one that stands at
// `from` reads on from there rather than from the compressed file's start (else a new one is put
// there).
OutputImport importOutput(RunStore& store, const RunRecord& run, int64_t from, int64_t to = -1,
                          std::unique_ptr<RawOutputReader>* reader = nullptr);

// How the imported output says the run ended (its run_end's status): a final state, or nullopt
// without a run_end or with a status that names none.
std::optional<RunState> endState(const OutputImport& done);

// What `parallax-cli import RUN` and a supervisor at start do for a run whose supervisor is gone:
// imports what output.log holds past the stored offset and, for a run recorded as lost whose
// output shows how it ended, records that end. Returns one line saying what was done. Throws
// std::runtime_error naming the reason when the run cannot be imported (its supervisor is alive,
// the run predates offsets, no output.log).
std::string recoverRunOutput(RunStore& store, int64_t runId, const std::string& thisHost);

} // namespace parallax
