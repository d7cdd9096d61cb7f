// parallax-cli: runs and supervises training runs, and reads the run store.
#include "app/cli/CliError.h"
#include "app/cli/Commands.h"
#include "core/launch/Preflight.h"
#include "core/launch/SpecRejected.h"
#include "core/spec/SpecIO.h"
#include "core/util/BuildId.h"

#include <CLI/CLI.hpp>

#include <sys/stat.h>

#include <csignal>
#include <filesystem>
#include <iostream>

using namespace parallax;

namespace {

const char* kFooter = R"(RUN is a run id or a run name (the latest run of that name).

Exit codes:
  0  done; for run, resume and attach: the run succeeded
  1  the run failed (or was lost)
  2  invalid spec or command line
  3  the run was stopped on request
  4  could not do it (unknown run, unreadable store, missing parallax-worker)

The worker is found beside parallax-cli or through the PARALLAX_WORKER environment variable.)";

} // namespace

int main(int argc, char** argv) {
    // A closed terminal or pipe must not kill a supervisor mid-run through SIGPIPE.
    std::signal(SIGPIPE, SIG_IGN);

    CLI::App app{"Parallax: launch, supervise and inspect distributed training runs", "parallax-cli"};
    app.footer(kFooter);
    app.set_version_flag("--version", versionLine("parallax-cli"));
    app.require_subcommand(1);
    app.fallthrough();
    std::string store = RunStore::defaultPath();
    app.add_option("--store", store, "The run store (SQLite)")->capture_default_str();

    RunCommandOptions runOptions;
    CLI::App* run = app.add_subcommand("run", "Start a run from a spec and supervise it in the foreground");
    run->add_option("spec", runOptions.spec, "The run spec (TOML)")->required();
    run->add_flag("--detach", runOptions.detach,
                  "Supervise in the background (own session, output in the run's folder); print the run id");
    run->add_option("--grace", runOptions.grace_s,
                    "Seconds the ranks get to checkpoint and stop after a stop request before SIGTERM")
        ->capture_default_str();
    run->add_option("--tag", runOptions.tags, "A tag for the run (repeatable)")->allow_extra_args(false);
    run->add_option("--notify-fd", runOptions.notify_fd)->group("");
    std::string runFrom;
    run->add_option("--from", runFrom,
                    "Continue RUN from its latest complete checkpoint with this spec (another layout, hosts or "
                    "devices; the same model): resume RUN --spec SPEC");
    run->add_option("--set", runOptions.sets, "FIELD=VALUE: with --from, change the spec further (repeatable)")
        ->allow_extra_args(false);

    RunCommandOptions resumeOptions;
    CLI::App* resume =
        app.add_subcommand("resume", "Start a new run that continues RUN from its latest complete checkpoint");
    resume->add_option("run", resumeOptions.run, "RUN")->required();
    resume->add_flag("--detach", resumeOptions.detach, "Supervise in the background; print the new run id");
    resume->add_option("--grace", resumeOptions.grace_s, "Seconds for a graceful stop before SIGTERM")
        ->capture_default_str();
    resume->add_option("--tag", resumeOptions.tags, "A tag for the run (repeatable)")->allow_extra_args(false);
    resume->add_option("--notify-fd", resumeOptions.notify_fd)->group("");
    resume->add_option("--spec", resumeOptions.resume_spec,
                       "Continue with this spec (another layout, hosts or devices; the same model)");
    resume->add_option("--set", resumeOptions.sets,
                       "FIELD=VALUE: change the spec it continues with, e.g. --set parallel.dp=2 (repeatable)")
        ->allow_extra_args(false);

    RunCommandOptions attachOptions;
    attachOptions.attach = true;
    CLI::App* attach = app.add_subcommand(
        "attach", "Follow RUN's Slurm batch job again (launch.slurm_mode = \"batch\") after its supervisor ended");
    attach->add_option("run", attachOptions.run, "RUN")->required();
    attach->add_flag("--detach", attachOptions.detach, "Follow it in the background");
    attach->add_option("--grace", attachOptions.grace_s, "Seconds for a graceful stop before the job is cancelled")
        ->capture_default_str();
    attach->add_option("--notify-fd", attachOptions.notify_fd)->group("");

    ListCommandOptions listOptions;
    bool listAll = false;
    CLI::App* ls = app.add_subcommand("ls", "List runs, newest first");
    ls->add_option("--state", listOptions.states, "Only runs in this state (repeatable)")
        ->allow_extra_args(false)
        ->check(CLI::IsMember({"queued", "running", "succeeded", "failed", "stopped", "lost"}));
    ls->add_option("--match", listOptions.text, "Only runs whose name, model, layout, tags or notes contain this");
    ls->add_option("--limit", listOptions.limit, "At most this many runs")->capture_default_str();
    ls->add_flag("--all", listAll, "Every run");

    std::string showRun;
    CLI::App* show = app.add_subcommand("show", "State, failure, hosts, launch command, summary and checkpoints of RUN");
    show->add_option("run", showRun, "RUN")->required();

    LogsCommandOptions logsOptions;
    CLI::App* logs = app.add_subcommand("logs", "Print the log of RUN (every rank, the launcher and the supervisor)");
    logs->add_option("run", logsOptions.run, "RUN")->required();
    logs->add_option("--rank", logsOptions.ranks, "Only this rank (repeatable; -1: launcher and supervisor)")
        ->allow_extra_args(false);
    logs->add_option("--level", logsOptions.level, "Only this level and above: debug, info, warn, error");
    logs->add_option("--grep", logsOptions.grep, "Only lines with these words (full-text search; FTS5 syntax works)");
    logs->add_flag("--follow,-f", logsOptions.follow, "Keep printing new lines until the run ends");
    logs->add_option("--tail,-n", logsOptions.tail, "Only the last N lines");

    std::string metricsRun;
    bool csv = false;
    CLI::App* metrics = app.add_subcommand("metrics", "Print the step metrics of RUN");
    metrics->add_option("run", metricsRun, "RUN")->required();
    metrics->add_flag("--csv", csv, "Comma-separated values with a header row, full precision");

    std::string reportRun;
    int64_t reportFrom = 0;
    CLI::App* report = app.add_subcommand(
        "report", "Medians of the steady steps of RUN, each rank's GPU or CPU over them, and its pipeline bubbles");
    report->add_option("run", reportRun, "RUN")->required();
    report->add_option("--from-step", reportFrom, "First step counted (leave warm-up steps out)")
        ->check(CLI::NonNegativeNumber);

    ExportCommandOptions exportOptions;
    CLI::App* exportRun = app.add_subcommand(
        "export", "Write a qwen2 / qwen2_5_vl run as a Hugging Face folder that transformers loads, or a LoRA "
                  "run's PEFT adapter");
    exportRun->add_option("run", exportOptions.run, "RUN")->required();
    exportRun->add_option("-o,--output", exportOptions.out, "The folder to write (new or empty)")->required();
    exportRun->add_option("--step", exportOptions.step, "The checkpoint of step N (default: the latest)");
    exportRun->add_flag("--merge", exportOptions.merge, "LoRA runs: the merged model, not the adapter alone");
    exportRun->add_flag("--fp32", exportOptions.fp32, "fp32 weights (default bf16)");
    exportRun->add_option("--max-shard-size", exportOptions.max_shard_size, "Shard size")->capture_default_str();

    std::string traceRun, traceOut;
    CLI::App* trace = app.add_subcommand(
        "trace", "Write RUN as a trace for Perfetto or chrome://tracing: spans per rank and stage, steps, "
                 "checkpoints, flight-recorder waits and log lines, one track per rank grouped by host");
    trace->add_option("run", traceRun, "RUN")->required();
    trace->add_option("-o,--output", traceOut, "The JSON file to write (- for standard output)")->required();

    std::string stopRun;
    bool stopWait = false;
    CLI::App* stop = app.add_subcommand("stop", "Ask RUN to checkpoint and stop (SIGTERM to its supervisor)");
    stop->add_option("run", stopRun, "RUN")->required();
    stop->add_flag("--wait", stopWait, "Wait until the run has ended");

    std::string importRun;
    CLI::App* import = app.add_subcommand(
        "import", "Bring into the store the rows of RUN that only its output.log holds (its supervisor ended early); "
                  "or, given a run folder or a folder of them (e.g. a damaged store's <store>.runs), those runs as new "
                  "runs of this store");
    import->add_option("run", importRun, "RUN or FOLDER")->required();

    std::string inspectPath;
    bool inspectSummary = false;
    CLI::App* inspect = app.add_subcommand(
        "inspect", "List the tensors of a safetensors checkpoint or model folder: dtypes, shapes, parameters, bytes "
                   "and the model its config names (reads headers only)");
    inspect->add_option("path", inspectPath, "A model folder, a .safetensors file or a *.safetensors.index.json")
        ->required();
    inspect->add_flag("--summary", inspectSummary, "Totals only, without the list of tensors");

    double cleanupWait = 0;
    CLI::App* cleanup = app.add_subcommand(
        "cleanup", "End the processes of runs left on hosts that could not be reached when the runs ended");
    cleanup->add_option("--wait", cleanupWait, "Keep trying for this many seconds while a host does not answer")
        ->check(CLI::NonNegativeNumber);

    std::string checkSpec;
    CLI::App* check =
        app.add_subcommand("check", "Validate a spec; print its problems, estimates and the launch command");
    check->add_option("spec", checkSpec, "The run spec (TOML)")->required();

    FitCommandOptions fitOptions;
    CLI::App* fit = app.add_subcommand(
        "fit", "Find the largest micro-batch that fits, by short probe runs on the spec's target");
    fit->add_option("spec", fitOptions.spec, "The run spec (TOML)")->required();
    fit->add_option("--memory-limit", fitOptions.memory_limit,
                    "Memory one rank may use (24GiB, 800MiB); on CPU the default is this machine's memory divided "
                    "among the spec's ranks");
    fit->add_option("--max-micro-batch", fitOptions.max_micro_batch, "The largest micro-batch to try")
        ->capture_default_str();
    fit->add_option("--activation-checkpointing", fitOptions.checkpointing, "off, on or both")->capture_default_str();
    fit->add_option("--steps", fitOptions.steps, "Steps of each probe run")->capture_default_str();
    fit->add_option("--probe-timeout", fitOptions.probe_timeout_s, "Seconds a probe run may take")
        ->capture_default_str();
    fit->add_flag("--csv", fitOptions.csv, "Every probe as a CSV row (progress on stderr)");

    BalanceCommandOptions balanceOptions;
    CLI::App* balance = app.add_subcommand(
        "balance", "Split the pipeline stages by each unit's time, measured in a short probe run on the spec's target");
    balance->add_option("spec", balanceOptions.spec, "The run spec (TOML)")->required();
    balance->add_option("--steps", balanceOptions.steps, "Steps of the probe run")->capture_default_str();
    balance->add_option("--probe-timeout", balanceOptions.probe_timeout_s, "Seconds the probe run may take")
        ->capture_default_str();
    bool balancePrintOnly = false;
    balance->add_flag("--print-only", balancePrintOnly, "Print the split; leave the spec file as it is");
    balance->add_flag("--csv", balanceOptions.csv, "Each stage as a CSV row (progress on stderr)");

    AdviseCommandOptions adviseOptions;
    CLI::App* advise = app.add_subcommand(
        "advise", "Rank every layout of the spec's model on N devices, and try the best few side by side");
    advise->add_option("spec", adviseOptions.spec, "The run spec (TOML)")->required();
    advise->add_option("--devices", adviseOptions.devices, "Devices (ranks) to lay out; default: the spec's processes");
    advise->add_option("--try", adviseOptions.try_count, "Layouts to try, best predicted first")->capture_default_str();
    advise->add_option("--steps", adviseOptions.steps, "Steps of each probe run")->capture_default_str();
    advise->add_option("--memory-limit", adviseOptions.memory_limit,
                       "Memory of one device (80GiB); on CPU the default is this machine's memory per rank");
    advise->add_option("--probe-timeout", adviseOptions.probe_timeout_s, "Seconds a probe run may take")
        ->capture_default_str();
    advise->add_flag("--csv", adviseOptions.csv, "Every layout as a CSV row (progress on stderr)");

    TokenizeCommandOptions tokenizeOptions;
    CLI::App* tokenize = app.add_subcommand(
        "tokenize", "Each line of standard input as token ids, space-separated, one line each (--decode: ids to text)");
    tokenize->add_option("tokenizer", tokenizeOptions.tokenizer,
                         "A tokenizer.json, or a model folder holding one (byte-level BPE: Qwen, Llama 3, GPT-2)")
        ->required();
    tokenize->add_flag("--decode", tokenizeOptions.decode,
                       "Read lines of ids and print their text (a text holding line breaks prints them)");

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        const int code = app.exit(e);
        return code == 0 ? 0 : ExitCode::Usage;
    }

    try {
        // Messages name the store by its full path, and a detached supervisor must find it too.
        store = std::filesystem::absolute(store).string();
        if (*run || *resume || *attach) {
            // A run's folder, checkpoints and logs may hold secrets: what the supervisor, the
            // launcher and the ranks create is readable by this user only.
            ::umask(077);
        }
        if (*run) {
            if (!runFrom.empty()) {
                runOptions.run = runFrom;
                runOptions.resume_spec = runOptions.spec;
                runOptions.spec.clear();
            } else if (!runOptions.sets.empty()) {
                throw CliError("run: --set changes the spec of a continued run; give --from RUN, or write the "
                               "change into " + runOptions.spec, ExitCode::Usage);
            }
            return runCommand(store, runOptions);
        }
        if (*resume)
            return runCommand(store, resumeOptions);
        if (*attach)
            return runCommand(store, attachOptions);
        if (*ls) {
            if (listAll)
                listOptions.limit = -1;
            return listCommand(store, listOptions);
        }
        if (*show)
            return showCommand(store, showRun);
        if (*logs)
            return logsCommand(store, logsOptions);
        if (*metrics)
            return metricsCommand(store, metricsRun, csv);
        if (*report)
            return reportCommand(store, reportRun, reportFrom);
        if (*trace)
            return traceCommand(store, traceRun, traceOut);
        if (*exportRun)
            return exportCommand(store, exportOptions);
        if (*stop)
            return stopCommand(store, stopRun, stopWait);
        if (*cleanup)
            return cleanupCommand(store, cleanupWait);
        if (*import)
            return importCommand(store, importRun);
        if (*inspect)
            return inspectCommand(inspectPath, inspectSummary);
        if (*check)
            return checkCommand(store, checkSpec);
        if (*fit)
            return fitCommand(store, fitOptions);
        if (*advise)
            return adviseCommand(store, adviseOptions);
        if (*tokenize)
            return tokenizeCommand(tokenizeOptions);
        if (*balance) {
            balanceOptions.write = !balancePrintOnly;
            return balanceCommand(store, balanceOptions);
        }
    } catch (const SpecRejected& e) {
        std::cerr << "parallax-cli: the spec has errors; nothing was started:\n" << e.what() << std::endl;
        return ExitCode::Usage;
    } catch (const PreflightFailed& e) {
        std::cerr << "parallax-cli: the hosts or Slurm are not ready; nothing was started:\n" << e.what() << std::endl;
        return ExitCode::Error;
    } catch (const SpecError& e) {
        std::cerr << "parallax-cli: " << e.what() << std::endl;
        return ExitCode::Usage;
    } catch (const std::invalid_argument& e) {
        std::cerr << "parallax-cli: " << e.what() << std::endl;
        return ExitCode::Usage;
    } catch (const CliError& e) {
        std::cerr << "parallax-cli: " << e.what() << std::endl;
        return e.code();
    } catch (const std::exception& e) {
        std::cerr << "parallax-cli: " << e.what() << std::endl;
        return ExitCode::Error;
    }
    return ExitCode::Usage;
}
