// launchIssues (LaunchChecks.h): the [launch] section's checks.
#include "core/spec/LaunchChecks.h"

#include "core/spec/ClusterProfile.h"
#include "core/spec/CheckedMath.h"
#include "core/spec/HostListChecks.h"
#include "core/spec/IssueList.h"
#include "core/spec/LauncherOptions.h"
#include "core/spec/SpecLimits.h"
#include "core/spec/TomlText.h"

#include <string>
#include <vector>

namespace parallax {

namespace {

std::string num(int64_t v) { return std::to_string(v); }
std::string inQuotes(const std::string& s) { return tomlString(s); }

// Slurm's --time forms: M, M:S, H:M:S, D-H, D-H:M, D-H:M:S.
bool isSlurmTime(const std::string& text) {
    auto numbers = [](const std::string& s, std::vector<int64_t>& out) {
        out.clear();
        size_t start = 0;
        while (true) {
            const size_t colon = s.find(':', start);
            const std::string part = s.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
            if (part.empty() || part.size() > 6 || part.find_first_not_of("0123456789") != std::string::npos)
                return false;
            out.push_back(std::stoll(part));
            if (colon == std::string::npos) return true;
            start = colon + 1;
        }
    };
    std::vector<int64_t> parts;
    const size_t dash = text.find('-');
    if (dash != std::string::npos) {
        std::vector<int64_t> days;
        if (!numbers(text.substr(0, dash), days) || days.size() != 1) return false;
        if (!numbers(text.substr(dash + 1), parts) || parts.size() > 3) return false;
        if (parts[0] > 23) return false;
        for (size_t i = 1; i < parts.size(); ++i)
            if (parts[i] > 59) return false;
        return true;
    }
    if (!numbers(text, parts) || parts.size() > 3) return false;
    for (size_t i = 1; i < parts.size(); ++i)
        if (parts[i] > 59) return false;
    return true;
}

bool isEnvName(const std::string& name) {
    if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
    for (char c : name) {
        const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
        if (!ok) return false;
    }
    return true;
}

// A variable whose name says it holds a credential (HF_TOKEN, WANDB_API_KEY, AWS_SECRET_ACCESS_KEY).
bool looksSecret(const std::string& name) {
    std::string upper;
    for (char c : name) upper += static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
    for (const char* word : {"TOKEN", "SECRET", "PASSWORD", "PASSWD", "API_KEY", "APIKEY", "ACCESS_KEY", "CREDENTIAL",
                             "PRIVATE_KEY"})
        if (upper.find(word) != std::string::npos) return true;
    return false;
}

class LaunchChecker {
public:
    explicit LaunchChecker(const RunSpec& spec) : s(spec) {}

    std::vector<SpecIssue> run() {
        const bool targetOk = checkChoice("launch.target", s.launch.target);
        checkChoice("launch.device", s.launch.device);
        checkProcesses();
        if (targetOk) checkHostFields();
        checkHostFailure();
        checkCounts();
        if (targetOk) checkSlurmFields();
        checkThreads();
        checkEnvironment();
        checkMpirunArgs(targetOk);
        return std::move(m_out.list);
    }

private:
    const RunSpec& s;
    IssueList m_out;

    void error(const std::string& field, const std::string& message, std::vector<std::string> related = {}) {
        m_out.error(field, message, std::move(related));
    }
    void warn(const std::string& field, const std::string& message, std::vector<std::string> related = {}) {
        m_out.warn(field, message, std::move(related));
    }
    bool checkChoice(const std::string& field, const ChoiceField& choice) { return m_out.checkChoice(field, choice); }
    bool checkCount(const std::string& field, int64_t value, int64_t minimum) {
        return m_out.checkCount(field, value, minimum);
    }
    std::vector<std::string> layoutFields() const { return {"parallel.dp", "parallel.tp", "parallel.pp"}; }
    bool cuda() const { return s.launch.device == Device::Cuda; }

    // launch.processes against the layout.
    void checkProcesses() {
        const LaunchSpec& l = s.launch;
        if (l.processes) {
            if (*l.processes < 1)
                error("launch.processes", "launch.processes = " + num(*l.processes) +
                                              " must be at least 1; leave it out to use parallel.dp * tp * pp",
                      layoutFields());
            else if (checkCount("launch.processes", *l.processes, 1) && layoutUsable(s) &&
                     *l.processes != s.worldSize())
                error("launch.processes", "parallel: dp*tp*pp = " + num(s.worldSize()) + " but launch asks for " +
                                              num(*l.processes) + " processes; set launch.processes = " +
                                              num(s.worldSize()) + " or leave it out",
                      layoutFields());
        }
    }

    // launch.hosts or launch.cluster: one of them with target = "hosts", neither otherwise.
    void checkHostFields() {
        const LaunchSpec& l = s.launch;
        if (l.target == Target::Hosts) {
            if (l.cluster.empty()) checkHosts();
            else if (const std::string problem = clusterReferenceProblem(l.cluster); !problem.empty())
                error("launch.cluster", problem);
            else if (!l.hosts.empty())
                error("launch.hosts", "launch.hosts and launch.cluster both name the hosts; keep one of them",
                      {"launch.cluster"});
        } else {
            if (!l.hosts.empty())
                warn("launch.hosts", "launch.hosts is used only with launch.target = \"hosts\"; it is ignored here",
                     {"launch.target"});
            if (!l.cluster.empty())
                warn("launch.cluster", "launch.cluster is used only with launch.target = \"hosts\"; it is ignored here",
                     {"launch.target"});
        }
    }

    // The launch's counts and times, whatever the target.
    void checkCounts() {
        const LaunchSpec& l = s.launch;
        if (l.host_timeout_s < 5)
            error("launch.host_timeout_s", "launch.host_timeout_s = " + num(l.host_timeout_s) +
                                               " must be at least 5 (seconds a host may stay silent)");
        else
            checkCount("launch.host_timeout_s", l.host_timeout_s, 5);
        checkChoice("launch.bind", l.bind);

        // Out-of-range counts are errors whatever the target, so that a spec switched to Slurm later is not
        // the first to hear of them.
        for (const auto& [field, value] : {std::pair{"launch.nodes", l.nodes}, {"launch.tasks_per_node", l.tasks_per_node},
                                           {"launch.signal_margin_s", l.signal_margin_s}}) {
            if (value < 0)
                error(field, std::string(field) + " = " + num(value) + " must be 0 or more");
            else
                checkCount(field, value, 0);
        }
    }

    // Slurm's fields: checked with target = "slurm", ignored (a warning) otherwise.
    void checkSlurmFields() {
        const LaunchSpec& l = s.launch;
        if (l.target == Target::Slurm) {
            checkChoice("launch.slurm_mode", l.slurm_mode);
            if (!l.time_limit.empty() && !isSlurmTime(l.time_limit))
                error("launch.time_limit", "launch.time_limit = " + inQuotes(l.time_limit) +
                                               " is not a Slurm time; write HH:MM:SS (e.g. \"02:00:00\"), MM, MM:SS, "
                                               "D-HH or D-HH:MM:SS, or leave it empty for the partition's limit");
            if (cuda() && l.gpus_per_node == 0)
                warn("launch.gpus_per_node", "launch.gpus_per_node = 0 asks Slurm for no GPUs with launch.device = "
                                             "cuda; set it to the GPUs of a node (e.g. 8) unless the partition gives them",
                     {"launch.device", "launch.target"});
            if (l.nodes > 0 && l.tasks_per_node > 0 && layoutUsable(s) &&
                saturatingMul(l.nodes, l.tasks_per_node) != s.processCount())
                error("launch.tasks_per_node", "launch.nodes * launch.tasks_per_node = " +
                                                   num(saturatingMul(l.nodes, l.tasks_per_node)) + " but the run has " +
                                                   num(s.processCount()) + " processes (parallel.dp * tp * pp); make "
                                                   "them agree or leave one of them 0",
                      {"launch.nodes", "parallel.dp", "parallel.tp", "parallel.pp", "launch.processes"});
            for (const auto& [field, value] : {std::pair{"launch.partition", &l.partition}, {"launch.account", &l.account},
                                               {"launch.qos", &l.qos}, {"launch.constraint", &l.constraint}})
                if (value->find_first_of(" \t\n'\"") != std::string::npos || (!value->empty() && (*value)[0] == '-'))
                    error(field, std::string(field) + " = " + inQuotes(*value) +
                                     " is not a Slurm name (no blanks, quotes or a leading '-')");
        } else {
            for (const auto& [field, value] : {std::pair{"launch.partition", &l.partition}, {"launch.account", &l.account},
                                               {"launch.qos", &l.qos}, {"launch.constraint", &l.constraint},
                                               {"launch.time_limit", &l.time_limit}})
                if (!value->empty())
                    warn(field, std::string(field) + " is used only with launch.target = \"slurm\"; it is ignored here",
                         {"launch.target"});
            if (l.slurm_mode != SlurmMode::Srun)
                warn("launch.slurm_mode", "launch.slurm_mode is used only with launch.target = \"slurm\"; it is "
                                          "ignored here");
        }
    }

    void checkThreads() {
        const LaunchSpec& l = s.launch;
        if (l.gpus_per_node < 0)
            error("launch.gpus_per_node", "launch.gpus_per_node = " + num(l.gpus_per_node) + " must be 0 or more");
        if (l.threads_per_rank < 0)
            error("launch.threads_per_rank", "launch.threads_per_rank = " + num(l.threads_per_rank) +
                                                 " must be 0 (cores / local ranks) or more");
        else
            checkCount("launch.threads_per_rank", l.threads_per_rank, 0);
    }

    // launch.env and launch.forward_env: names, commands, secrets.
    void checkEnvironment() {
        const LaunchSpec& l = s.launch;
        for (const auto& [name, value] : l.env) {
            if (!isEnvName(name))
                error("launch.env", "launch.env." + tomlKey(name) +
                                        " is not a valid environment variable name; use letters, digits and '_', not "
                                        "starting with a digit");
            const std::string runs = environmentRunsCommands(name, value);
            if (!runs.empty()) warn("launch.env", "launch.env runs commands: launch.env." + tomlKey(name) + " " + runs);
            if (looksSecret(name))
                warn("launch.env", "launch.env." + tomlKey(name) +
                                       " looks like a secret, and its value is kept with the run's spec (in the store "
                                       "and the run folder); pass it from the environment instead: launch.forward_env "
                                       "= [\"" + name + "\"]",
                     {"launch.forward_env"});
        }
        for (size_t i = 0; i < l.forward_env.size(); ++i) {
            const std::string& name = l.forward_env[i];
            if (!isEnvName(name))
                error("launch.forward_env", "launch.forward_env[" + num(int64_t(i)) + "] = " + tomlString(name) +
                                                " is not a valid environment variable name; use letters, digits and "
                                                "'_', not starting with a digit");
            else if (l.env.count(name))
                error("launch.forward_env", "launch.forward_env names " + name +
                                                ", which launch.env sets too; keep one of them",
                      {"launch.env"});
        }
    }

    // launch.mpirun_args: no empty entry, and none that the launcher sets itself.
    void checkMpirunArgs(bool targetOk) {
        const LaunchSpec& l = s.launch;
        bool argsOk = true;
        for (size_t i = 0; i < l.mpirun_args.size(); ++i) {
            if (l.mpirun_args[i].empty()) {
                argsOk = false;
                error("launch.mpirun_args", "launch.mpirun_args[" + num(int64_t(i)) +
                                                "] is empty; remove it (each entry is passed as one argument)");
            }
        }
        if (targetOk && argsOk) {
            m_out.add(
                checkLauncherArgs(l.mpirun_args, l.target == Target::Slurm ? Launcher::Srun : Launcher::OpenMpi));
        }
    }

    // launch.on_host_failure and what goes with it.
    void checkHostFailure() {
        const LaunchSpec& l = s.launch;
        checkCount("launch.min_hosts", l.min_hosts, 1);
        checkCount("launch.max_restarts", l.max_restarts, 0);
        if (!checkChoice("launch.on_host_failure", l.on_host_failure)) return;
        const bool hosts = l.target == Target::Hosts;
        if (!hosts && !l.exclude_hosts.empty())
            warn("launch.exclude_hosts", "launch.exclude_hosts is used only with launch.target = \"hosts\"; it is "
                                         "ignored here", {"launch.target"});
        if (l.on_host_failure != OnHostFailure::Resume) return;
        if (!hosts) {
            warn("launch.on_host_failure", "launch.on_host_failure = \"resume\" is used only with launch.target = "
                                           "\"hosts\"; here a lost host or rank fails the run", {"launch.target"});
            return;
        }
        if (s.train.checkpoint_every <= 0)
            warn("launch.on_host_failure", "launch.on_host_failure = \"resume\" continues from the newest checkpoint, "
                                           "but train.checkpoint_every = 0 writes none until the run ends: a lost "
                                           "host fails the run; set train.checkpoint_every (e.g. 100)",
                 {"train.checkpoint_every"});
        if (l.cluster.empty() && l.min_hosts > distinctHostCount(l))
            error("launch.min_hosts", "launch.min_hosts = " + num(l.min_hosts) + " but launch.hosts names " +
                                          num(distinctHostCount(l)) + " host(s)" +
                                          (l.exclude_hosts.empty() ? "" : " besides launch.exclude_hosts") +
                                          "; lower it or add hosts",
                  {"launch.hosts", "launch.exclude_hosts"});
    }

    void checkHosts() {
        m_out.add(hostListIssues(s, layoutUsable(s)));
    }
};

} // namespace

std::vector<SpecIssue> launchIssues(const RunSpec& spec) { return LaunchChecker(spec).run(); }

} // namespace parallax
