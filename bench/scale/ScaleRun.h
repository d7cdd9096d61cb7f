#pragma once

// A scale run: the real supervisor with bench_scale_launcher as its mpirun (ScaleLauncher.cpp),
// and the check that every line the launcher wrote became a row of the store.

#include "core/launch/CheckedSpec.h"
#include "core/store/RunStore.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace parallax::scale {

// What the launcher wrote: lines per kind (run_start, text, step, device, rank_step, comm, span,
// run_end), its first line's time, and the ranks it made silent and slow (-1: none).
struct Emitted {
    std::map<std::string, int64_t> lines;
    double t0 = 0;
    int hang_rank = -1;
    int straggler_rank = -1;
};
// The launcher's counts file; nullopt when it is missing (the launcher did not end by itself).
std::optional<Emitted> readEmitted(const std::string& path);

// The run's rows of each kind the launcher counts: run_start (1 when the run has it), text (the
// ranks' stdout lines in the log), step, device, rank_step, comm, span, and run_end (1 when the
// run succeeded, which only the ranks' run_end makes it). Device samples and rank steps count what
// their rows stand for once the supervisor has thinned them (StoredTelemetry.h): the sum of the
// device rows' `samples`, and the steps the rank_step rows cover.
std::map<std::string, int64_t> storedRows(const RunStore& store, int64_t run);

// One line per kind whose rows differ from the lines written: "device: 1000 lines written, 998
// rows stored". Empty: every line is in the store.
std::vector<std::string> mismatches(const Emitted& emitted, const std::map<std::string, int64_t>& stored);

// The spec of a run of `ranks` ranks (layoutFor) for `seconds` one-second steps, telemetry at its
// defaults but telemetry.hang_after_s, and retention.raw_telemetry_minutes when `rawMinutes` > 0
// (else the spec's default); not validated against this machine (its cores would refuse the rank
// count of a local run).
CheckedSpec scaleSpec(int ranks, double seconds, int64_t hangAfterS = 30, int64_t rawMinutes = 0);

// Supervises a scale run to its end with `launcher` as mpirun (and as the worker's path, which it
// ignores). The launcher takes its orders from the environment (ScaleLayout.h).
RunRecord superviseScaleRun(RunStore& store, int ranks, double seconds, const std::string& launcher,
                            bool handleSignals, int64_t hangAfterS = 30, int64_t rawMinutes = 0);

// This executable again, as a child process: `arguments` after its own path, stdin from /dev/null,
// stdout and stderr into `log`. Exits naming `who` when it cannot start.
pid_t spawnSelf(const std::vector<std::string>& arguments, const std::string& log, const char* who);

} // namespace parallax::scale
