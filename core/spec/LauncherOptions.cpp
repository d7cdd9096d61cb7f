#include "core/spec/LauncherOptions.h"

#include "core/spec/Suggestions.h"
#include "core/spec/TomlText.h"

namespace parallax {

namespace {

using A = OptionArgs;
using E = OptionEffect;

constexpr const char* kProcesses = "is set by Parallax from parallel.dp * tp * pp (launch.processes); remove it";
constexpr const char* kHosts =
    "chooses the hosts, which Parallax sets from launch.target and launch.hosts; list them in launch.hosts";
constexpr const char* kBind = "is set by Parallax from launch.bind; set launch.bind instead";
constexpr const char* kOutput =
    "sends the ranks' output somewhere else than to Parallax, which reads it for telemetry and logs; remove it";
constexpr const char* kNoRun = "makes the launcher print or prepare something and start no rank; remove it";
constexpr const char* kMcaFile = "reads MCA parameters from {}, which can set launch agents";
constexpr const char* kStartsIn = "starts the ranks in the folder {} (relative paths of the spec change meaning)";

// mpirun --help all of Open MPI 4.1. Every long name is also accepted with one dash (-np, -mca).
const std::vector<LauncherOption> kMpirun = {
    {"allow-run-as-root", 0, A::None, E::Plain, ""},
    {"am", 0, A::One, E::RunsCommands, kMcaFile},
    {"app", 0, A::One, E::RunsCommands,
     "runs the programs listed in the appfile {} and ignores every other option, the worker's command line included"},
    {"bind-to", 0, A::One, E::SetByParallax, kBind},
    {"bind-to-core", 0, A::None, E::SetByParallax, kBind},
    {"bind-to-socket", 0, A::None, E::SetByParallax, kBind},
    {"bycore", 0, A::None, E::Plain, ""},
    {"bynode", 0, A::None, E::Plain, ""},
    {"byslot", 0, A::None, E::Plain, ""},
    {"np", 'c', A::One, E::SetByParallax, kProcesses},
    {"cartofile", 0, A::One, E::Plain, ""},
    {"cf", 0, A::One, E::Plain, ""},
    {"continuous", 0, A::None, E::Plain, ""},
    {"cpu-list", 0, A::One, E::Plain, ""},
    {"cpu-set", 0, A::One, E::Plain, ""},
    {"cpus-per-proc", 0, A::One, E::Plain, ""},
    {"cpus-per-rank", 0, A::One, E::Plain, ""},
    {"debug-devel", 'd', A::None, E::Plain, ""},
    {"debug", 0, A::None, E::RunsCommands, "starts the ranks under the debugger that orte_base_user_debugger names"},
    {"debug-daemons", 0, A::None, E::Plain, ""},
    {"debug-daemons-file", 0, A::None, E::Plain, ""},
    {"debugger", 0, A::One, E::RunsCommands, "names {} as the debugger that --debug starts the ranks under"},
    {"default-hostfile", 0, A::One, E::SetByParallax, kHosts},
    {"disable-recovery", 0, A::None, E::Plain, ""},
    {"display-allocation", 0, A::None, E::Plain, ""},
    {"display-devel-allocation", 0, A::None, E::Plain, ""},
    {"display-devel-map", 0, A::None, E::Plain, ""},
    {"display-diffable-map", 0, A::None, E::Plain, ""},
    {"display-map", 0, A::None, E::Plain, ""},
    {"display-topo", 0, A::None, E::Plain, ""},
    {"do-not-launch", 0, A::None, E::StopsRun, kNoRun},
    {"do-not-resolve", 0, A::None, E::Plain, ""},
    {"dvm", 0, A::None, E::StopsRun, "starts a persistent virtual machine instead of the run; remove it"},
    {"enable-instant-on-support", 0, A::None, E::Plain, ""},
    {"enable-recovery", 0, A::None, E::Plain, ""},
    {"fwd-mpirun-port", 0, A::None, E::Plain, ""},
    {"get-stack-traces", 0, A::None, E::Plain, ""},
    {"gmca", 0, A::Two, E::Plain, ""},
    {"help", 'h', A::None, E::StopsRun, kNoRun},
    {"host", 'H', A::One, E::SetByParallax, kHosts},
    {"hnp", 0, A::One, E::Plain, ""},
    {"hostfile", 0, A::One, E::SetByParallax, kHosts},
    {"index-argv-by-rank", 0, A::None, E::Plain, ""},
    {"launch-agent", 0, A::One, E::RunsCommands, "starts {} on every host instead of orted"},
    {"leave-session-attached", 0, A::None, E::Plain, ""},
    {"machinefile", 0, A::One, E::SetByParallax, kHosts},
    {"map-by", 0, A::One, E::Plain, ""},
    {"max-restarts", 0, A::One, E::Plain, ""},
    {"max-vm-size", 0, A::One, E::Plain, ""},
    {"mca", 0, A::Two, E::Plain, ""},
    {"merge-stderr-to-stdout", 0, A::None, E::Plain, ""},
    {"N", 0, A::One, E::Plain, ""},
    {"n", 0, A::One, E::SetByParallax, kProcesses},
    {"nolocal", 0, A::None, E::Plain, ""},
    {"nooversubscribe", 0, A::None, E::Plain, ""},
    {"noprefix", 0, A::None, E::Plain, ""},
    {"novm", 0, A::None, E::Plain, ""},
    {"npernode", 0, A::One, E::Plain, ""},
    {"npersocket", 0, A::One, E::Plain, ""},
    {"ompi-server", 0, A::One, E::Plain, ""},
    {"output-filename", 0, A::One, E::StopsRun, kOutput},
    {"output-proctable", 0, A::None, E::Plain, ""},
    {"oversubscribe", 0, A::None, E::Plain, ""},
    {"path", 0, A::One, E::RunsCommands, "looks up the programs it starts in {}"},
    {"pernode", 0, A::None, E::Plain, ""},
    {"personality", 0, A::One, E::Plain, ""},
    {"ppr", 0, A::One, E::Plain, ""},
    {"prefix", 0, A::One, E::RunsCommands, "runs orted and the Open MPI libraries from {} on every host"},
    {"preload-files", 0, A::One, E::RunsCommands, "copies {} to every host before starting the ranks"},
    {"quiet", 'q', A::None, E::Plain, ""},
    {"rank-by", 0, A::One, E::Plain, ""},
    {"report-bindings", 0, A::None, E::Plain, ""},
    {"report-child-jobs-separately", 0, A::None, E::Plain, ""},
    {"report-events", 0, A::One, E::Plain, ""},
    {"report-pid", 0, A::One, E::Plain, ""},
    {"report-state-on-timeout", 0, A::None, E::Plain, ""},
    {"report-uri", 0, A::One, E::Plain, ""},
    {"rankfile", 0, A::One, E::Plain, ""},
    {"rf", 0, A::One, E::Plain, ""},
    {"preload-binary", 's', A::None, E::RunsCommands, "copies the worker to every host and starts that copy"},
    {"set-cwd-to-session-dir", 0, A::None, E::RunsCommands,
     "starts the ranks in their session folder (relative paths of the spec change meaning)"},
    {"show-progress", 0, A::None, E::Plain, ""},
    {"stdin", 0, A::One, E::Plain, ""},
    {"tag-output", 0, A::None, E::Plain, ""},
    {"timeout", 0, A::One, E::Plain, ""},
    {"timestamp-output", 0, A::None, E::Plain, ""},
    {"tune", 0, A::One, E::RunsCommands, kMcaFile},
    {"tv", 0, A::None, E::RunsCommands, "starts the ranks under the debugger that orte_base_user_debugger names"},
    {"use-hwthread-cpus", 0, A::None, E::Plain, ""},
    {"use-regexp", 0, A::None, E::Plain, ""},
    {"verbose", 'v', A::None, E::Plain, ""},
    {"version", 'V', A::None, E::StopsRun, kNoRun},
    {"wd", 0, A::One, E::RunsCommands, kStartsIn},
    {"wdir", 0, A::One, E::RunsCommands, kStartsIn},
    {"x", 0, A::One, E::Plain, ""},
    {"xml", 0, A::None, E::StopsRun, kOutput},
    {"xml-file", 0, A::One, E::StopsRun, kOutput},
    {"xterm", 0, A::One, E::RunsCommands, "opens xterm windows for ranks {}"},
};

// The MCA parameters of Open MPI 4.1 (ompi_info --param all all --level 9) whose value is a
// command, arguments of one, or a place code or further parameters are loaded from.
struct McaParameter {
    const char* name;
    const char* note; // "{}": the value
};

const std::vector<McaParameter> kMcaRunsCommands = {
    {"plm_rsh_agent", "starts {} on every host instead of ssh"},
    {"pls_rsh_agent", "starts {} on every host instead of ssh"},
    {"orte_rsh_agent", "starts {} on every host instead of ssh"},
    {"plm_rsh_args", "passes {} to ssh for every host (ssh options such as ProxyCommand run commands)"},
    {"plm_slurm_args", "passes {} to the srun that starts the daemons"},
    {"orte_launch_agent", "starts {} on every host instead of orted"},
    {"orte_fork_agent", "starts every rank through {}"},
    {"orte_base_user_debugger", "names {} as the debugger that --debug starts the ranks under"},
    {"orte_debugger_test_daemon", "starts {} as a debugger daemon"},
    {"mca_base_component_path", "loads Open MPI plugins from {}"},
    {"mca_component_path", "loads Open MPI plugins from {}"},
    {"mca_base_param_files", "reads MCA parameters from {}, which can set launch agents"},
    {"mca_param_files", "reads MCA parameters from {}, which can set launch agents"},
    {"mca_base_envar_file_prefix", "reads MCA parameters from {}, which can set launch agents"},
    {"mca_base_param_file_prefix", "reads MCA parameters from {}, which can set launch agents"},
    {"mca_base_param_file_path", "reads MCA parameter files from {}, which can set launch agents"},
};

// Environment variables that change the code a process runs (the dynamic loader's).
const std::vector<McaParameter> kEnvironmentRunsCommands = {
    {"LD_PRELOAD", "loads {} into every rank"},
    {"LD_AUDIT", "loads {} into every rank"},
    {"LD_LIBRARY_PATH", "makes every rank load its libraries (LibTorch, MPI) from {} first"},
};

constexpr const char* kOutputSrun =
    "sends the ranks' output somewhere else than to Parallax, which reads it for telemetry and logs; remove it";

// srun of Slurm 22.05 (man srun).
const std::vector<LauncherOption> kSrun = {
    {"accel-bind", 0, A::One, E::Plain, ""},
    {"account", 'A', A::One, E::SetByParallax, "is set by Parallax from launch.account; set launch.account instead"},
    {"acctg-freq", 0, A::One, E::Plain, ""},
    {"bb", 0, A::One, E::Plain, ""},
    {"bbf", 0, A::One, E::Plain, ""},
    {"bcast", 0, A::Optional, E::RunsCommands, "copies the worker to every node and starts that copy"},
    {"bcast-exclude", 0, A::One, E::Plain, ""},
    {"begin", 'b', A::One, E::Plain, ""},
    {"chdir", 'D', A::One, E::RunsCommands, "starts the ranks in the folder {} (relative paths of the spec change meaning)"},
    {"cluster-constraint", 0, A::One, E::Plain, ""},
    {"clusters", 'M', A::One, E::Plain, ""},
    {"comment", 0, A::One, E::Plain, ""},
    {"compress", 0, A::Optional, E::Plain, ""},
    {"constraint", 'C', A::One, E::Plain, ""},
    {"container", 0, A::One, E::RunsCommands, "starts the ranks inside the container bundle {}"},
    {"contiguous", 0, A::None, E::Plain, ""},
    {"core-spec", 'S', A::One, E::Plain, ""},
    {"cores-per-socket", 0, A::One, E::Plain, ""},
    {"cpu-bind", 0, A::One, E::Plain, ""},
    {"cpu-freq", 0, A::One, E::Plain, ""},
    {"cpus-per-gpu", 0, A::One, E::Plain, ""},
    {"cpus-per-task", 'c', A::One, E::SetByParallax,
     "is set by Parallax from launch.threads_per_rank; set launch.threads_per_rank instead"},
    {"deadline", 0, A::One, E::Plain, ""},
    {"delay-boot", 0, A::One, E::Plain, ""},
    {"dependency", 'd', A::One, E::Plain, ""},
    {"disable-status", 'X', A::None, E::Plain, ""},
    {"distribution", 'm', A::One, E::Plain, ""},
    {"epilog", 0, A::One, E::RunsCommands, "runs {} after the job step"},
    {"error", 'e', A::One, E::StopsRun, kOutputSrun},
    {"exact", 0, A::None, E::Plain, ""},
    {"exclude", 'x', A::One, E::Plain, ""},
    {"exclusive", 0, A::Optional, E::Plain, ""},
    {"export", 0, A::One, E::Plain, ""},
    {"extra-node-info", 'B', A::One, E::Plain, ""},
    {"gid", 0, A::One, E::RunsCommands, "runs the ranks as group {}"},
    {"gpu-bind", 0, A::One, E::Plain, ""},
    {"gpu-freq", 0, A::One, E::Plain, ""},
    {"gpus", 'G', A::One, E::Plain, ""},
    {"gpus-per-node", 0, A::One, E::SetByParallax,
     "is set by Parallax from launch.gpus_per_node; set launch.gpus_per_node instead"},
    {"gpus-per-socket", 0, A::One, E::Plain, ""},
    {"gpus-per-task", 0, A::One, E::Plain, ""},
    {"gres", 0, A::One, E::Plain, ""},
    {"gres-flags", 0, A::One, E::Plain, ""},
    {"help", 'h', A::None, E::StopsRun, kNoRun},
    {"het-group", 0, A::One, E::Plain, ""},
    {"hint", 0, A::One, E::Plain, ""},
    {"hold", 'H', A::None, E::Plain, ""},
    {"immediate", 'I', A::Optional, E::Plain, ""},
    {"input", 'i', A::One, E::Plain, ""},
    {"job-name", 'J', A::One, E::Plain, ""},
    {"jobid", 0, A::One, E::Plain, ""},
    {"kill-on-bad-exit", 'K', A::Optional, E::Plain, ""},
    {"label", 'l', A::None, E::Plain, ""},
    {"licenses", 'L', A::One, E::Plain, ""},
    {"mail-type", 0, A::One, E::Plain, ""},
    {"mail-user", 0, A::One, E::Plain, ""},
    {"mcs-label", 0, A::One, E::Plain, ""},
    {"mem", 0, A::One, E::Plain, ""},
    {"mem-bind", 0, A::One, E::Plain, ""},
    {"mem-per-cpu", 0, A::One, E::Plain, ""},
    {"mem-per-gpu", 0, A::One, E::Plain, ""},
    {"mincpus", 0, A::One, E::Plain, ""},
    {"mpi", 0, A::One, E::Plain, ""},
    {"msg-timeout", 0, A::One, E::Plain, ""},
    {"multi-prog", 0, A::None, E::RunsCommands,
     "reads the program of every rank from a configuration file, and would read the worker's path as that file"},
    {"network", 0, A::One, E::Plain, ""},
    {"nice", 0, A::Optional, E::Plain, ""},
    {"no-allocate", 'Z', A::None, E::Plain, ""},
    {"no-kill", 'k', A::Optional, E::Plain, ""},
    {"nodefile", 'F', A::One, E::Plain, ""},
    {"nodelist", 'w', A::One, E::Plain, ""},
    {"nodes", 'N', A::One, E::Plain, ""},
    {"ntasks", 'n', A::One, E::SetByParallax, kProcesses},
    {"ntasks-per-core", 0, A::One, E::Plain, ""},
    {"ntasks-per-gpu", 0, A::One, E::Plain, ""},
    {"ntasks-per-node", 0, A::One, E::Plain, ""},
    {"ntasks-per-socket", 0, A::One, E::Plain, ""},
    {"open-mode", 0, A::One, E::Plain, ""},
    {"output", 'o', A::One, E::StopsRun, kOutputSrun},
    {"overcommit", 'O', A::None, E::Plain, ""},
    {"overlap", 0, A::None, E::Plain, ""},
    {"oversubscribe", 's', A::None, E::Plain, ""},
    {"partition", 'p', A::One, E::SetByParallax, "is set by Parallax from launch.partition; set launch.partition instead"},
    {"power", 0, A::One, E::Plain, ""},
    {"prefer", 0, A::One, E::Plain, ""},
    {"preserve-env", 'E', A::None, E::Plain, ""},
    {"priority", 0, A::One, E::Plain, ""},
    {"profile", 0, A::One, E::Plain, ""},
    {"prolog", 0, A::One, E::RunsCommands, "runs {} before the job step"},
    {"propagate", 0, A::Optional, E::Plain, ""},
    {"pty", 0, A::None, E::Plain, ""},
    {"qos", 'q', A::One, E::Plain, ""},
    {"quiet", 'Q', A::None, E::Plain, ""},
    {"quit-on-interrupt", 0, A::None, E::Plain, ""},
    {"reboot", 0, A::None, E::Plain, ""},
    {"relative", 'r', A::One, E::Plain, ""},
    {"reservation", 0, A::One, E::Plain, ""},
    {"resv-ports", 0, A::Optional, E::Plain, ""},
    {"send-libs", 0, A::Optional, E::Plain, ""},
    {"signal", 0, A::One, E::Plain, ""},
    {"slurmd-debug", 0, A::One, E::Plain, ""},
    {"sockets-per-node", 0, A::One, E::Plain, ""},
    {"spread-job", 0, A::None, E::Plain, ""},
    {"switches", 0, A::One, E::Plain, ""},
    {"task-epilog", 0, A::One, E::RunsCommands, "runs {} after every task"},
    {"task-prolog", 0, A::One, E::RunsCommands, "runs {} before every task"},
    {"test-only", 0, A::None, E::StopsRun, kNoRun},
    {"thread-spec", 0, A::One, E::Plain, ""},
    {"threads", 'T', A::One, E::Plain, ""},
    {"threads-per-core", 0, A::One, E::Plain, ""},
    {"time", 't', A::One, E::SetByParallax, "is set by Parallax from launch.time_limit; set launch.time_limit instead"},
    {"time-min", 0, A::One, E::Plain, ""},
    {"tmp", 0, A::One, E::Plain, ""},
    {"uid", 0, A::One, E::RunsCommands, "runs the ranks as user {}"},
    {"unbuffered", 'u', A::None, E::Plain, ""},
    {"usage", 0, A::None, E::StopsRun, kNoRun},
    {"use-min-nodes", 0, A::None, E::Plain, ""},
    {"verbose", 'v', A::None, E::Plain, ""},
    {"version", 'V', A::None, E::StopsRun, kNoRun},
    {"wait", 'W', A::One, E::Plain, ""},
    {"wckey", 0, A::One, E::Plain, ""},
    {"x11", 0, A::Optional, E::Plain, ""},
};

std::string quoted(const std::string& value) {
    // Shell-style single quotes, so the message shows exactly the argument.
    std::string out = "'";
    for (char c : value) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

std::string fill(const char* note, const std::string& value) {
    std::string out = note;
    const size_t at = out.find("{}");
    if (at != std::string::npos) out.replace(at, 2, quoted(value));
    return out;
}

const McaParameter* find(const std::vector<McaParameter>& table, const std::string& name) {
    for (const McaParameter& p : table)
        if (name == p.name) return &p;
    return nullptr;
}

// Walks the arguments of one launcher, as it parses them, and collects the issues.
class ArgsChecker {
public:
    ArgsChecker(const std::vector<std::string>& args, Launcher launcher)
        : m_args(args), m_launcher(launcher),
          m_options(launcher == Launcher::OpenMpi ? mpirunOptions() : srunOptions()) {}

    std::vector<SpecIssue> run() {
        size_t i = 0;
        while (i < m_args.size()) i = m_launcher == Launcher::OpenMpi ? mpirunWord(i) : srunWord(i);
        return m_issues;
    }

private:
    const std::vector<std::string>& m_args;
    Launcher m_launcher;
    const std::vector<LauncherOption>& m_options;
    std::vector<SpecIssue> m_issues;
    bool m_otherContext = false; // after mpirun's ':', options belong to another program

    std::string entry(size_t i) const {
        return "launch.mpirun_args[" + std::to_string(i) + "] = " + tomlString(m_args[i]);
    }

    void error(const std::string& message) { m_issues.push_back({"launch.mpirun_args", message, false}); }
    void runsCommands(const std::string& what) {
        m_issues.push_back({"launch.mpirun_args", "launch.mpirun_args runs commands: " + what, true});
    }

    std::vector<std::string> spelledNames() const {
        std::vector<std::string> names;
        for (const LauncherOption& o : m_options) names.push_back("--" + std::string(o.name));
        return names;
    }

    void unknown(size_t i, const std::string& spelled) {
        error(entry(i) + ": " + spelled + " is not an option of " + launcherName(m_launcher) +
              didYouMean(spelled, spelledNames(), false));
    }

    void missingValue(size_t i, const std::string& spelled, int count) {
        error(entry(i) + ": " + spelled + " needs " + (count == 2 ? "a name and a value" : "a value") +
              " after it; without " + (count == 2 ? "them" : "one") + " it would take the worker's command line");
    }

    // An option with its values (`text` as the launcher reads it, e.g. "--mca plm_rsh_agent 'foo'").
    void effect(size_t i, const LauncherOption& o, const std::string& text, const std::string& value) {
        switch (o.effect) {
        case OptionEffect::Plain: break;
        case OptionEffect::SetByParallax:
            if (!m_otherContext) error(entry(i) + ": " + text + " " + o.note);
            break;
        case OptionEffect::StopsRun: error(entry(i) + ": " + text + " " + o.note); break;
        case OptionEffect::RunsCommands: runsCommands(text + " " + fill(o.note, value)); break;
        }
    }

    void environment(const std::string& text, const std::string& assignment) {
        const size_t eq = assignment.find('=');
        const std::string name = assignment.substr(0, eq);
        // Without "=" the variable is passed on with the value it has where the launcher runs.
        const std::string value = eq == std::string::npos ? "$" + name : assignment.substr(eq + 1);
        const std::string note = environmentRunsCommands(name, value);
        if (!note.empty()) runsCommands(text + " " + note);
    }

    void program(size_t i, const std::string& how) {
        runsCommands(how + quoted(m_args[i]) + " is a program: " + launcherName(m_launcher) +
                     " starts it instead of parallax-worker, with the worker's command line as its arguments");
    }

    // ---- mpirun: "-name" or "--name", values as the following words, ":" between app contexts.

    size_t mpirunWord(size_t i) {
        const std::string& word = m_args[i];
        if (word == ":") {
            runsCommands("':' starts another app context: mpirun runs a second program beside the worker");
            m_otherContext = true;
            return i + 1;
        }
        if (word == "--") {
            // The next word is the program; with none, the worker follows and is the program.
            return i + 1 < m_args.size() ? mpirunProgram(i + 1) : i + 1;
        }
        if (word.size() < 2 || word[0] != '-') return mpirunProgram(i);
        const std::string name = word.substr(word[1] == '-' ? 2 : 1);
        const LauncherOption* option = nullptr;
        for (const LauncherOption& o : m_options)
            if (name == o.name || (name.size() == 1 && name[0] == o.letter)) option = &o;
        if (!option) {
            // mpirun stops at the first option it does not know; what follows is not read.
            unknown(i, word);
            return m_args.size();
        }
        const int count = option->args == OptionArgs::Two ? 2 : option->args == OptionArgs::One ? 1 : 0;
        if (i + count >= m_args.size()) {
            missingValue(i, word, count);
            return m_args.size();
        }
        // The launcher's word for what it sets (an MCA parameter's name) bare, values in quotes.
        std::string text = word;
        for (int k = 1; k <= count; ++k) text += " " + (k < count ? m_args[i + k] : quoted(m_args[i + k]));
        const std::string value = count > 0 ? m_args[i + count] : "";
        effect(i, *option, text, value);
        if (option->args == OptionArgs::Two) {
            if (const McaParameter* p = find(kMcaRunsCommands, m_args[i + 1]))
                runsCommands(text + " " + fill(p->note, value));
        }
        if (std::string(option->name) == "x") environment(text, value);
        return i + 1 + count;
    }

    // A program and its arguments, up to the next app context.
    size_t mpirunProgram(size_t i) {
        program(i, "");
        while (i < m_args.size() && m_args[i] != ":") ++i;
        return i;
    }

    // ---- srun: getopt_long: "--name", "--name=value", "--name value", unique prefixes of long
    // names, "-c4", "-c 4", clustered flags ("-lu"); the first other word is the program.

    const LauncherOption* srunLong(size_t i, const std::string& name) {
        std::vector<const LauncherOption*> prefixed;
        for (const LauncherOption& o : m_options) {
            if (name == o.name) return &o;
            if (std::string(o.name).rfind(name, 0) == 0) prefixed.push_back(&o);
        }
        if (prefixed.size() == 1 && !name.empty()) return prefixed.front();
        if (prefixed.size() > 1) {
            std::vector<std::string> names;
            for (const LauncherOption* o : prefixed) names.push_back("--" + std::string(o->name));
            error(entry(i) + ": --" + name + " is ambiguous for srun: it could be " + joinList(names, " or ") +
                  "; write the whole name");
            return nullptr;
        }
        unknown(i, "--" + name);
        return nullptr;
    }

    size_t srunWord(size_t i) {
        const std::string& word = m_args[i];
        if (word == "--") return i + 1 < m_args.size() ? srunProgram(i + 1) : i + 1;
        if (word.size() < 2 || word[0] != '-') return srunProgram(i);
        if (word[1] == '-') {
            const size_t eq = word.find('=');
            const std::string name = word.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
            const LauncherOption* o = srunLong(i, name);
            if (!o) return m_args.size(); // srun stops at an option it does not know
            const std::string spelled = "--" + std::string(o->name);
            if (eq != std::string::npos) {
                if (o->args == OptionArgs::None) {
                    error(entry(i) + ": " + spelled + " takes no value; write it alone");
                    return i + 1;
                }
                return srunOption(i, *o, word, word.substr(eq + 1), i + 1);
            }
            if (o->args == OptionArgs::One) {
                if (i + 1 >= m_args.size()) {
                    missingValue(i, spelled, 1);
                    return i + 1;
                }
                return srunOption(i, *o, word + " " + quoted(m_args[i + 1]), m_args[i + 1], i + 2);
            }
            return srunOption(i, *o, word, "", i + 1);
        }
        // One or more letters; the first that takes a value takes the rest of the word (or the
        // next word when nothing follows it).
        for (size_t k = 1; k < word.size(); ++k) {
            const LauncherOption* o = nullptr;
            for (const LauncherOption& candidate : m_options)
                if (candidate.letter != 0 && candidate.letter == word[k]) o = &candidate;
            const std::string spelled = std::string("-") + word[k];
            if (!o) {
                unknown(i, spelled);
                return m_args.size();
            }
            if (o->args == OptionArgs::None) {
                effect(i, *o, spelled, "");
                continue;
            }
            const std::string rest = word.substr(k + 1);
            if (!rest.empty() || o->args == OptionArgs::Optional) return srunOption(i, *o, spelled + rest, rest, i + 1);
            if (i + 1 >= m_args.size()) {
                missingValue(i, spelled, 1);
                return i + 1;
            }
            return srunOption(i, *o, spelled + " " + quoted(m_args[i + 1]), m_args[i + 1], i + 2);
        }
        return i + 1;
    }

    size_t srunOption(size_t i, const LauncherOption& o, const std::string& text, const std::string& value,
                      size_t next) {
        effect(i, o, text, value);
        if (std::string(o.name) == "export") {
            // --export=[ALL,]NAME[=value],...
            size_t start = 0;
            while (start <= value.size()) {
                const size_t comma = value.find(',', start);
                const std::string item = value.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
                if (!item.empty()) environment(text, item);
                if (comma == std::string::npos) break;
                start = comma + 1;
            }
        }
        return next;
    }

    // srun passes every word after the program to it.
    size_t srunProgram(size_t i) {
        program(i, "");
        return m_args.size();
    }
};

} // namespace

const std::vector<LauncherOption>& mpirunOptions() { return kMpirun; }
const std::vector<LauncherOption>& srunOptions() { return kSrun; }

std::string launcherName(Launcher launcher) {
    return launcher == Launcher::OpenMpi ? "mpirun (Open MPI 4.1)" : "srun (Slurm 22.05)";
}

std::vector<SpecIssue> checkLauncherArgs(const std::vector<std::string>& args, Launcher launcher) {
    return ArgsChecker(args, launcher).run();
}

std::string environmentRunsCommands(const std::string& name, const std::string& value) {
    const McaParameter* p = find(kEnvironmentRunsCommands, name);
    return p ? fill(p->note, value) : "";
}

} // namespace parallax
