// The subcommands of parallax-cli: each one's name, help, arguments, and the command it runs.
#include "app/cli/Subcommands.h"

#include "app/cli/CliError.h"
#include "app/cli/Commands.h"

#include <CLI/CLI.hpp>

#include <memory>

namespace parallax {

namespace {

using Handler = std::function<int(const std::string& storePath)>;

// The arguments of each subcommand are bound to options that live as long as its handler.

Handler runArguments(CLI::App& run) {
    auto o = std::make_shared<RunCommandOptions>();
    auto from = std::make_shared<std::string>();
    run.add_option("spec", o->spec, "The run spec (TOML)")->required();
    run.add_flag("--detach", o->detach,
                 "Supervise in the background (own session, output in the run's folder); print the run id");
    run.add_option("--grace", o->grace_s,
                   "Seconds the ranks get to checkpoint and stop after a stop request before SIGTERM")
        ->capture_default_str();
    run.add_option("--tag", o->tags, "A tag for the run (repeatable)")->allow_extra_args(false);
    run.add_option("--notify-fd", o->notify_fd)->group("");
    run.add_option("--from", *from,
                   "Continue RUN from its latest complete checkpoint with this spec (another layout, hosts or "
                   "devices; the same model): resume RUN --spec SPEC");
    run.add_option("--set", o->sets, "FIELD=VALUE: with --from, change the spec further (repeatable)")
        ->allow_extra_args(false);
    return [o, from](const std::string& storePath) {
        if (!from->empty()) {
            o->run = *from;
            o->resume_spec = o->spec;
            o->spec.clear();
        } else if (!o->sets.empty()) {
            throw CliError("run: --set changes the spec of a continued run; give --from RUN, or write the "
                           "change into " + o->spec, ExitCode::Usage);
        }
        return runCommand(storePath, *o);
    };
}

Handler resumeArguments(CLI::App& resume) {
    auto o = std::make_shared<RunCommandOptions>();
    resume.add_option("run", o->run, "RUN")->required();
    resume.add_flag("--detach", o->detach, "Supervise in the background; print the new run id");
    resume.add_option("--grace", o->grace_s, "Seconds for a graceful stop before SIGTERM")->capture_default_str();
    resume.add_option("--tag", o->tags, "A tag for the run (repeatable)")->allow_extra_args(false);
    resume.add_option("--notify-fd", o->notify_fd)->group("");
    resume.add_option("--spec", o->resume_spec,
                      "Continue with this spec (another layout, hosts or devices; the same model)");
    resume.add_option("--set", o->sets,
                      "FIELD=VALUE: change the spec it continues with, e.g. --set parallel.dp=2 (repeatable)")
        ->allow_extra_args(false);
    return [o](const std::string& storePath) { return runCommand(storePath, *o); };
}

Handler attachArguments(CLI::App& attach) {
    auto o = std::make_shared<RunCommandOptions>();
    o->attach = true;
    attach.add_option("run", o->run, "RUN")->required();
    attach.add_flag("--detach", o->detach, "Follow it in the background");
    attach.add_option("--grace", o->grace_s, "Seconds for a graceful stop before the job is cancelled")
        ->capture_default_str();
    attach.add_option("--notify-fd", o->notify_fd)->group("");
    return [o](const std::string& storePath) { return runCommand(storePath, *o); };
}

std::vector<std::string> runStateNames() {
    std::vector<std::string> names;
    for (const RunState state : runStates()) names.push_back(runStateName(state));
    return names;
}

Handler listArguments(CLI::App& ls) {
    auto o = std::make_shared<ListCommandOptions>();
    auto all = std::make_shared<bool>(false);
    ls.add_option("--state", o->states, "Only runs in this state (repeatable)")
        ->allow_extra_args(false)
        ->check(CLI::IsMember(runStateNames()));
    ls.add_option("--match", o->text, "Only runs whose name, model, layout, tags or notes contain this");
    ls.add_option("--limit", o->limit, "At most this many runs")->capture_default_str();
    ls.add_flag("--all", *all, "Every run");
    return [o, all](const std::string& storePath) {
        if (*all)
            o->limit = -1;
        return listCommand(storePath, *o);
    };
}

Handler showArguments(CLI::App& show) {
    auto run = std::make_shared<std::string>();
    show.add_option("run", *run, "RUN")->required();
    return [run](const std::string& storePath) { return showCommand(storePath, *run); };
}

Handler logsArguments(CLI::App& logs) {
    auto o = std::make_shared<LogsCommandOptions>();
    logs.add_option("run", o->run, "RUN")->required();
    logs.add_option("--rank", o->ranks, "Only this rank (repeatable; -1: launcher and supervisor)")
        ->allow_extra_args(false);
    logs.add_option("--level", o->level, "Only this level and above: debug, info, warn, error");
    logs.add_option("--grep", o->grep, "Only lines with these words (full-text search; FTS5 syntax works)");
    logs.add_flag("--follow,-f", o->follow, "Keep printing new lines until the run ends");
    logs.add_option("--tail,-n", o->tail, "Only the last N lines");
    return [o](const std::string& storePath) { return logsCommand(storePath, *o); };
}

Handler metricsArguments(CLI::App& metrics) {
    auto run = std::make_shared<std::string>();
    auto csv = std::make_shared<bool>(false);
    metrics.add_option("run", *run, "RUN")->required();
    metrics.add_flag("--csv", *csv, "Comma-separated values with a header row, full precision");
    return [run, csv](const std::string& storePath) { return metricsCommand(storePath, *run, *csv); };
}

Handler samplesArguments(CLI::App& samples) {
    auto o = std::make_shared<SamplesCommandOptions>();
    samples.add_option("run", o->run, "RUN")->required();
    samples.add_option("--step", o->step, "Only the images of this step");
    samples.add_option("--out,-o", o->out, "Write each image into this folder as sample_s<step>_i<index>.png");
    return [o](const std::string& storePath) { return samplesCommand(storePath, *o); };
}

Handler reportArguments(CLI::App& report) {
    auto run = std::make_shared<std::string>();
    auto from = std::make_shared<int64_t>(0);
    report.add_option("run", *run, "RUN")->required();
    report.add_option("--from-step", *from, "First step counted (leave warm-up steps out)")
        ->check(CLI::NonNegativeNumber);
    return [run, from](const std::string& storePath) { return reportCommand(storePath, *run, *from); };
}

Handler exportArguments(CLI::App& exportRun) {
    auto o = std::make_shared<ExportCommandOptions>();
    exportRun.add_option("run", o->run, "RUN")->required();
    exportRun.add_option("-o,--output", o->out, "The folder to write (new or empty)")->required();
    exportRun.add_option("--step", o->step, "The checkpoint of step N (default: the latest)");
    exportRun.add_flag("--merge", o->merge, "LoRA runs: the merged model, not the adapter alone");
    exportRun.add_flag("--fp32", o->fp32, "fp32 weights (default bf16)");
    exportRun.add_option("--max-shard-size", o->max_shard_size, "Shard size")->capture_default_str();
    return [o](const std::string& storePath) { return exportCommand(storePath, *o); };
}

Handler traceArguments(CLI::App& trace) {
    auto run = std::make_shared<std::string>();
    auto out = std::make_shared<std::string>();
    trace.add_option("run", *run, "RUN")->required();
    trace.add_option("-o,--output", *out, "The JSON file to write (- for standard output)")->required();
    return [run, out](const std::string& storePath) { return traceCommand(storePath, *run, *out); };
}

Handler stopArguments(CLI::App& stop) {
    auto run = std::make_shared<std::string>();
    auto wait = std::make_shared<bool>(false);
    stop.add_option("run", *run, "RUN")->required();
    stop.add_flag("--wait", *wait, "Wait until the run has ended");
    return [run, wait](const std::string& storePath) { return stopCommand(storePath, *run, *wait); };
}

Handler importArguments(CLI::App& import) {
    auto run = std::make_shared<std::string>();
    import.add_option("run", *run, "RUN or FOLDER")->required();
    return [run](const std::string& storePath) { return importCommand(storePath, *run); };
}

Handler inspectArguments(CLI::App& inspect) {
    auto path = std::make_shared<std::string>();
    auto summary = std::make_shared<bool>(false);
    inspect.add_option("path", *path, "A model folder, a .safetensors file or a *.safetensors.index.json")
        ->required();
    inspect.add_flag("--summary", *summary, "Totals only, without the list of tensors");
    return [path, summary](const std::string&) { return inspectCommand(*path, *summary); };
}

Handler cleanupArguments(CLI::App& cleanup) {
    auto wait = std::make_shared<double>(0);
    cleanup.add_option("--wait", *wait, "Keep trying for this many seconds while a host does not answer")
        ->check(CLI::NonNegativeNumber);
    return [wait](const std::string& storePath) { return cleanupCommand(storePath, *wait); };
}

Handler checkArguments(CLI::App& check) {
    auto spec = std::make_shared<std::string>();
    check.add_option("spec", *spec, "The run spec (TOML)")->required();
    return [spec](const std::string& storePath) { return checkCommand(storePath, *spec); };
}

Handler fitArguments(CLI::App& fit) {
    auto o = std::make_shared<FitCommandOptions>();
    fit.add_option("spec", o->spec, "The run spec (TOML)")->required();
    fit.add_option("--memory-limit", o->memory_limit,
                   "Memory one rank may use (24GiB, 800MiB); on CPU the default is this machine's memory divided "
                   "among the spec's ranks");
    fit.add_option("--max-micro-batch", o->max_micro_batch, "The largest micro-batch to try")->capture_default_str();
    fit.add_option("--activation-checkpointing", o->checkpointing, "off, on or both")->capture_default_str();
    fit.add_option("--steps", o->steps, "Steps of each probe run")->capture_default_str();
    fit.add_option("--probe-timeout", o->probe_timeout_s, "Seconds a probe run may take")->capture_default_str();
    fit.add_flag("--csv", o->csv, "Every probe as a CSV row (progress on stderr)");
    return [o](const std::string& storePath) { return fitCommand(storePath, *o); };
}

Handler balanceArguments(CLI::App& balance) {
    auto o = std::make_shared<BalanceCommandOptions>();
    auto printOnly = std::make_shared<bool>(false);
    balance.add_option("spec", o->spec, "The run spec (TOML)")->required();
    balance.add_option("--steps", o->steps, "Steps of the probe run")->capture_default_str();
    balance.add_option("--probe-timeout", o->probe_timeout_s, "Seconds the probe run may take")
        ->capture_default_str();
    balance.add_flag("--print-only", *printOnly, "Print the split; leave the spec file as it is");
    balance.add_flag("--csv", o->csv, "Each stage as a CSV row (progress on stderr)");
    return [o, printOnly](const std::string& storePath) {
        o->write = !*printOnly;
        return balanceCommand(storePath, *o);
    };
}

Handler adviseArguments(CLI::App& advise) {
    auto o = std::make_shared<AdviseCommandOptions>();
    advise.add_option("spec", o->spec, "The run spec (TOML)")->required();
    advise.add_option("--devices", o->devices, "Devices (ranks) to lay out; default: the spec's processes");
    advise.add_option("--try", o->try_count, "Layouts to try, best predicted first")->capture_default_str();
    advise.add_option("--steps", o->steps, "Steps of each probe run")->capture_default_str();
    advise.add_option("--memory-limit", o->memory_limit,
                      "Memory of one device (80GiB); on CPU the default is this machine's memory per rank");
    advise.add_option("--probe-timeout", o->probe_timeout_s, "Seconds a probe run may take")->capture_default_str();
    advise.add_flag("--csv", o->csv, "Every layout as a CSV row (progress on stderr)");
    return [o](const std::string& storePath) { return adviseCommand(storePath, *o); };
}

Handler tokenizeArguments(CLI::App& tokenize) {
    auto o = std::make_shared<TokenizeCommandOptions>();
    tokenize.add_option("tokenizer", o->tokenizer,
                        "A tokenizer.json, or a model folder holding one or a Qwen2Tokenizer's vocab.json, "
                        "merges.txt and tokenizer_config.json (byte-level BPE: Qwen, Llama 3, GPT-2)")
        ->required();
    tokenize.add_flag("--decode", o->decode,
                      "Read lines of ids and print their text (a text holding line breaks prints them)");
    return [o](const std::string&) { return tokenizeCommand(*o); };
}

Handler cacheArguments(CLI::App& cache) {
    auto o = std::make_shared<CacheCommandOptions>();
    cache.add_option("spec", o->spec, "SPEC.toml: model.from a Qwen-Image pipeline folder, data.path its dataset")
        ->required();
    cache.add_option("--device", o->device, "cpu or cuda (the first GPU)")->capture_default_str();
    cache.add_flag("--bf16", o->bf16, "Run the VAE and the text encoder in bf16 (default fp32)");
    return [o](const std::string&) { return cacheCommand(*o); };
}

struct SubcommandEntry {
    const char* name;
    const char* description;
    Handler (*addArguments)(CLI::App&);
    bool createsRunFiles;
};

// In the order --help lists them.
const SubcommandEntry kSubcommands[] = {
    {"run", "Start a run from a spec and supervise it in the foreground", runArguments, true},
    {"resume", "Start a new run that continues RUN from its latest complete checkpoint", resumeArguments, true},
    {"attach",
     "Follow RUN's Slurm batch job again (launch.slurm_mode = \"batch\") after its supervisor ended",
     attachArguments, true},
    {"ls", "List runs, newest first", listArguments, false},
    {"show", "State, failure, hosts, launch command, summary and checkpoints of RUN", showArguments, false},
    {"logs", "Print the log of RUN (every rank, the launcher and the supervisor)", logsArguments, false},
    {"metrics", "Print the step metrics of RUN", metricsArguments, false},
    {"samples",
     "List the images RUN drew as it trained ([samples] of qwen_image and qwen_image_vae); --out writes them as "
     "PNG files",
     samplesArguments, false},
    {"report",
     "Medians of the steady steps of RUN, each rank's GPU or CPU over them, and its pipeline bubbles",
     reportArguments, false},
    {"export",
     "Write a qwen2 / qwen2_5_vl run as a Hugging Face folder that transformers loads (a qwen_image "
     "run as the diffusers transformer folder, a qwen_image_vae run as the diffusers VAE folder), or a LoRA "
     "run's adapter (PEFT; diffusers and ComfyUI files too for qwen_image)",
     exportArguments, false},
    {"cache",
     "Encode SPEC's image-caption dataset once (the VAE's latents of each image at its aspect bucket, the "
     "text encoder's states of each prompt) into the cache beside it, which its qwen_image runs read; "
     "goes on where a cut-short cache stopped",
     cacheArguments, false},
    {"trace",
     "Write RUN as a trace for Perfetto or chrome://tracing: spans per rank and stage, steps, "
     "checkpoints, flight-recorder waits and log lines, one track per rank grouped by host",
     traceArguments, false},
    {"stop", "Ask RUN to checkpoint and stop (SIGTERM to its supervisor)", stopArguments, false},
    {"import",
     "Bring into the store the rows of RUN that only its output.log holds (its supervisor ended early); "
     "or, given a run folder or a folder of them (e.g. a damaged store's <store>.runs), those runs as new "
     "runs of this store",
     importArguments, false},
    {"inspect",
     "List the tensors of a safetensors checkpoint or model folder: dtypes, shapes, parameters, bytes "
     "and the model its config names (reads headers only)",
     inspectArguments, false},
    {"cleanup", "End the processes of runs left on hosts that could not be reached when the runs ended",
     cleanupArguments, false},
    {"check", "Validate a spec; print its problems, estimates and the launch command", checkArguments, false},
    {"fit", "Find the largest micro-batch that fits, by short probe runs on the spec's target", fitArguments,
     false},
    {"balance",
     "Split the pipeline stages by each unit's time, measured in a short probe run on the spec's target",
     balanceArguments, false},
    {"advise", "Rank every layout of the spec's model on N devices, and try the best few side by side",
     adviseArguments, false},
    {"tokenize",
     "Each line of standard input as token ids, space-separated, one line each (--decode: ids to text)",
     tokenizeArguments, false},
};

} // namespace

std::vector<Subcommand> addSubcommands(CLI::App& app) {
    std::vector<Subcommand> added;
    for (const SubcommandEntry& e : kSubcommands) {
        CLI::App* sub = app.add_subcommand(e.name, e.description);
        added.push_back({sub, e.addArguments(*sub), e.createsRunFiles});
    }
    return added;
}

} // namespace parallax
