#pragma once

#include "core/spec/StageBalance.h"
#include "core/store/RunStore.h"

#include <ostream>

#include <optional>
#include <string>
#include <vector>

namespace parallax {

// One function per subcommand of parallax-cli; each returns the process exit code (CliError.h)
// or throws CliError.

struct RunCommandOptions {
    std::string spec;            // run: the spec file
    std::string run;             // resume: RUN (id or name)
    bool detach = false;
    double grace_s = 120;        // SIGUSR1 -> SIGTERM
    std::vector<std::string> tags;
    int notify_fd = -1;          // internal: the detached child reports the run id here
    bool attach = false;         // attach: follow RUN's Slurm batch job again (its supervisor is gone)
    bool stop_first = false;     // attach for stop: ask the job to checkpoint and stop at once
    std::string resume_spec;     // resume: continue with this spec instead (same model)
    std::vector<std::string> sets; // resume: FIELD=VALUE changes to the spec it continues with
};
int runCommand(const std::string& storePath, const RunCommandOptions& o);

struct ListCommandOptions {
    std::vector<std::string> states;
    std::string text;
    int64_t limit = 50;
};
int listCommand(const std::string& storePath, const ListCommandOptions& o);

int showCommand(const std::string& storePath, const std::string& run);

struct LogsCommandOptions {
    std::string run;
    std::vector<int> ranks;
    std::string level;
    std::string grep;
    bool follow = false;
    int64_t tail = -1;
};
int logsCommand(const std::string& storePath, const LogsCommandOptions& o);

int metricsCommand(const std::string& storePath, const std::string& run, bool csv);

// The images RUN drew ([samples]): one line each; with `out`, each written there as a PNG
// (sample_s<step>_i<index>.png). `step`: only that step's (none: exit code 1).
struct SamplesCommandOptions {
    std::string run;
    std::optional<int64_t> step;
    std::string out;
};
int samplesCommand(const std::string& storePath, const SamplesCommandOptions& o);

// Medians of the steps from `fromStep` on, every rank's device over them, and the pipeline bubble of
// each step with spans next to the schedule's theory (core/store/RunReport.h).
int reportCommand(const std::string& storePath, const std::string& run, int64_t fromStep);

// RUN as a Chrome/Perfetto trace (core/store/TraceExport.h) written to `outPath` ("-": stdout).
int traceCommand(const std::string& storePath, const std::string& run, const std::string& outPath);

int stopCommand(const std::string& storePath, const std::string& run, bool wait);

// RUN (a qwen2 / qwen2_5_vl run started from model.from) as a Hugging Face folder, or a LoRA run's
// adapter alone without --merge: runs parallax-export (beside this executable) on the run's folder.
struct ExportCommandOptions {
    std::string run;
    std::string out;
    int64_t step = -1;               // the checkpoint of step N; -1: the latest complete one
    bool merge = false;              // LoRA runs: the merged model (else the adapter alone)
    bool fp32 = false;
    std::string max_shard_size = "5GB";
};
int exportCommand(const std::string& storePath, const ExportCommandOptions& o);

// SPEC's image-caption dataset encoded once into its latent cache: runs parallax-cache (beside this
// executable), which prints its progress.
struct CacheCommandOptions {
    std::string spec;
    std::string device = "cpu"; // cpu or cuda
    bool bf16 = false;
};
int cacheCommand(const CacheCommandOptions& o);

int checkCommand(const std::string& storePath, const std::string& spec);

struct FitCommandOptions {
    std::string spec;
    std::string memory_limit;      // "24GiB", "800MiB", bytes; empty: this machine's memory per rank (CPU)
    int64_t max_micro_batch = 1024;
    std::string checkpointing = "both"; // off | on | both
    int64_t steps = 3;             // per probe; the peak is the most of them
    double probe_timeout_s = 900;
    bool csv = false;
};
// The largest micro-batch the spec's layout runs with on its target, with and without activation
// checkpointing: short probe runs (doubling, then bisecting), each probe's measured peak beside
// the estimate. The probes' store and folders are removed at the end.
int fitCommand(const std::string& storePath, const FitCommandOptions& o);

struct AdviseCommandOptions {
    std::string spec;
    std::optional<int64_t> devices; // unset: the spec's processes
    int64_t try_count = 3;         // layouts tried side by side, best predicted first
    int64_t steps = 6;             // per probe; the first warms up
    std::string memory_limit;      // per device; on local CPU the default is this machine's memory per rank
    double probe_timeout_s = 900;
    bool csv = false;
};
// Every dp x tp x pp x zero of the spec's model on `devices` devices: which can run (validator,
// memory), a step-time model calibrated by two probes on those devices, and the best predicted
// tried side by side, ranked by measured tokens/s.
int adviseCommand(const std::string& storePath, const AdviseCommandOptions& o);

struct BalanceCommandOptions {
    std::string spec;
    int64_t steps = 3;             // of the probe; the first warms up
    double probe_timeout_s = 900;
    bool write = true;             // write parallel.stage_layers (and stage_split = "profile") into the spec
    bool csv = false;
};
// Pipeline stages split by measured time: a probe of the spec on its target times every unit's
// forward and backward (telemetry.unit_times), the split whose slowest stage is fastest is printed
// beside the spec's and, unless told not to, written into the spec file.
int balanceCommand(const std::string& storePath, const BalanceCommandOptions& o);
// The probe and the split behind balance, shared with `run` of a spec with stage_split = "profile" and
// no stage_layers yet. Throws CliError when the layout has no split to choose or the probe fails.
struct MeasuredBalance {
    StageBalance balance;
    std::vector<UnitTimeEvent> unit_times; // as the probe's ranks reported them
};
MeasuredBalance measureBalance(const std::string& storePath, const RunSpec& spec, int64_t steps,
                               double probeTimeoutSeconds);
void printBalance(std::ostream& out, const StageBalance& b);

// Ends the processes of runs left on hosts that could not be reached when the runs ended
// (RunStore::pendingCleanups), trying again every few seconds for `waitSeconds`.
int cleanupCommand(const std::string& storePath, double waitSeconds);
// The same in a detached process of its own, for an hour at most.
void startBackgroundCleanup(const std::string& storePath);
// parallax-cli attach RUN --detach in the background, for a Slurm batch job nobody follows.
void startBackgroundAttach(const std::string& storePath, int64_t run);

// Imports the rows of RUN that its output.log holds past what the store has (OutputImport.h).
int importCommand(const std::string& storePath, const std::string& run);

// The tensors of a safetensors checkpoint (a file, an index, or a model folder as transformers or
// diffusers save it): names, dtypes, shapes, counts per dtype, parameters, bytes, and the model the
// folder's config names. Reads headers only. `summary`: leave out the list of tensors.
int inspectCommand(const std::string& path, bool summary);

struct TokenizeCommandOptions {
    std::string tokenizer; // a tokenizer.json or a model folder holding one
    bool decode = false;
};
// Each line of standard input (cut at LF only) as its token ids, space-separated, one line each; or,
// with decode, each line of ids as its text.
int tokenizeCommand(const TokenizeCommandOptions& o);

// Shared by the commands.
RunRecord requireRun(const RunStore& store, const std::string& idOrName);
std::string thisHost();
bool pidAlive(int64_t pid);
int exitCodeForState(RunState state);
// In a child after fork(): a session of its own, stdin/stdout/stderr on /dev/null (async-signal-safe).
void detachIntoOwnSession();
// Marks this host's runs whose supervisor died as lost, so that they do not read "running"; a
// store this user may only read is left as it is.
void markLostRunsIfWritable(RunStore& store);

} // namespace parallax
