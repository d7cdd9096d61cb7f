#include "core/launch/Preflight.h"

#include "core/launch/SlurmJobs.h"

#include <cstdlib>

#include "core/launch/CommandRun.h"
#include "core/launch/Ssh.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <random>
#include <sstream>

namespace parallax {

namespace {

// What runs on each host: the facts preflight needs, one "@px KEY VALUE" line each. The script is
// fixed; the worker's path and the token file come as its arguments, quoted for the remote shell.
constexpr const char* kProbeScript =
    "echo \"@px host $(hostname)\"; "
    "echo \"@px cores $(getconf _NPROCESSORS_ONLN 2>/dev/null || nproc)\"; "
    "echo \"@px load $(cut -d' ' -f1 /proc/loadavg 2>/dev/null)\"; "
    "if [ -x \"$1\" ]; then echo \"@px worker $(sha256sum \"$1\" | cut -d' ' -f1)\"; "
    "else echo \"@px noworker\"; fi; "
    "if [ -n \"$2\" ]; then if [ -r \"$2\" ]; then echo \"@px token $(cat \"$2\")\"; "
    "else echo \"@px notoken\"; fi; fi; "
    "n=0; for p in /proc/[0-9]*; do [ \"$(cat \"$p/comm\" 2>/dev/null)\" = parallax-worker ] && n=$((n+1)); done; "
    "echo \"@px ranks $n\"; "
    "if command -v nvidia-smi >/dev/null 2>&1; then "
    "nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null | sed 's/^/@px gpu /'; fi";

std::string firstLine(const std::string& text) {
    std::string line = text.substr(0, text.find('\n'));
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    return line;
}

// The last line ssh printed that says what went wrong (its own messages end the output).
std::string sshComplaint(const std::string& err) {
    std::string last;
    std::istringstream in(err);
    for (std::string line; std::getline(in, line);) {
        while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
        if (!line.empty() && line.rfind("Warning: Permanently added", 0) != 0) last = line;
    }
    return last;
}

std::string randomToken() {
    std::random_device rd;
    std::ostringstream s;
    s << std::hex << rd() << rd() << rd();
    return s.str();
}

// A file only this check knows, in the folder that must be shared; removed when it goes out of scope.
class TokenFile {
public:
    explicit TokenFile(const std::string& folder) {
        if (folder.empty()) return;
        m_token = randomToken();
        m_path = folder + "/.parallax-preflight-" + m_token;
        const int fd = ::open(m_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0) {
            m_error = std::strerror(errno);
            m_path.clear();
            return;
        }
        const bool ok = ::write(fd, m_token.data(), m_token.size()) == static_cast<ssize_t>(m_token.size());
        ::close(fd);
        if (!ok) m_error = "cannot write it";
    }
    ~TokenFile() {
        if (!m_path.empty()) ::unlink(m_path.c_str());
    }
    const std::string& path() const { return m_path; }
    const std::string& token() const { return m_token; }
    const std::string& error() const { return m_error; }

private:
    std::string m_path, m_token, m_error;
};

void readFacts(const std::string& out, HostCheck& c, std::string& worker, bool& noWorker, std::string& token,
               bool& noToken) {
    std::istringstream in(out);
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("@px ", 0) != 0) continue;
        const size_t space = line.find(' ', 4);
        const std::string key = line.substr(4, space == std::string::npos ? std::string::npos : space - 4);
        const std::string value = space == std::string::npos ? std::string() : firstLine(line.substr(space + 1));
        try {
            if (key == "host") c.hostname = value;
            else if (key == "cores") c.cores = std::stoll(value);
            else if (key == "load") c.load = std::stod(value);
            else if (key == "worker") worker = value;
            else if (key == "noworker") noWorker = true;
            else if (key == "token") token = value;
            else if (key == "notoken") noToken = true;
            else if (key == "ranks") c.ranks_running = std::stoll(value);
            else if (key == "gpu" && !value.empty()) c.gpus.push_back(value);
        } catch (const std::exception&) {
            // A host whose tools print something else: that fact stays unknown.
        }
    }
}

// A partition setting as a number; -1 when unset, or UNLIMITED and the like (no limit).
int64_t settingNumber(const std::map<std::string, std::string>& kv, const char* key) {
    const auto it = kv.find(key);
    if (it == kv.end()) return -1;
    try {
        return std::stoll(it->second);
    } catch (const std::exception&) {
        return -1;
    }
}

// launch.gpus_per_node against the GPUs of the partition `p`.
void checkGpus(const LaunchSpec& l, const std::map<std::string, std::string>& p, int64_t totalNodes,
               const std::string& which, std::vector<std::string>& problems) {
    if (l.gpus_per_node <= 0)
        return;
    // TRES=cpu=64,mem=...,node=2,billing=64,gres/gpu=16: the partition's GPUs in all.
    int64_t gpus = 0;
    if (const auto tres = p.find("TRES"); tres != p.end()) {
        const std::string& t = tres->second;
        const size_t at = t.find("gres/gpu=");
        if (at != std::string::npos) gpus = std::atoll(t.c_str() + at + 9);
    }
    const int64_t perNode = totalNodes > 0 ? gpus / totalNodes : gpus;
    if (gpus == 0)
        problems.push_back("launch.gpus_per_node = " + std::to_string(l.gpus_per_node) + " but " + which +
                           " has no GPUs (no gres/gpu in its TRES); choose a GPU partition or set "
                           "launch.gpus_per_node = 0");
    else if (l.gpus_per_node > perNode)
        problems.push_back("launch.gpus_per_node = " + std::to_string(l.gpus_per_node) + " but a node of " +
                           which + " has " + std::to_string(perNode) + " GPU(s); ask for at most " +
                           std::to_string(perNode));
}

// What one host's answer to the check says: its facts, and what keeps a run from starting there.
void judgeHost(HostCheck& c, const CommandResult& r, const std::string& worker, const std::string& localBuild,
               const PreflightOptions& o, const TokenFile& token) {
    std::string remoteWorker;
    bool noWorker = false, noToken = false;
    std::string readToken;
    readFacts(r.out, c, remoteWorker, noWorker, readToken, noToken);
    if (c.hostname.empty()) {
        c.problems.push_back(c.host + ": the check did not run there (exit code " + std::to_string(r.exit_code) +
                             (sshComplaint(r.err).empty() ? "" : ": " + sshComplaint(r.err)) +
                             "); it needs a POSIX shell on the host");
        return;
    }
    c.reachable = true;
    c.worker_build = remoteWorker;
    if (noWorker) {
        c.problems.push_back(c.host + ": there is no parallax-worker at " + worker +
                             "; install Parallax there at that path, or set worker = \"...\" in the cluster "
                             "profile to where it is");
    } else if (!localBuild.empty() && remoteWorker != localBuild) {
        c.problems.push_back(c.host + ": " + worker + " there is another build than " + o.local_worker +
                             " here (sha256 " + remoteWorker.substr(0, 12) + " there, " + localBuild.substr(0, 12) +
                             " here); install the same build on every host");
    }
    if (!o.shared_folder.empty()) {
        if (!token.error().empty()) {
            c.problems.push_back("cannot write a test file in " + o.shared_folder + " here (" + token.error() +
                                 "), so it cannot be checked on the hosts");
        } else if (noToken || readToken != token.token()) {
            c.problems.push_back(c.host + ": " + o.shared_folder +
                                 " is not the same folder there (a test file written here cannot be read on " +
                                 c.host + "); the run folders (checkpoints, output) need a file system shared "
                                 "by every host at the same path, e.g. NFS");
        }
    }
    if (c.cores > 0 && c.slot_count > c.cores)
        c.notes.push_back(c.host + ": " + std::to_string(c.slot_count) + " slots but " + std::to_string(c.cores) +
                          " cores; ranks will share cores");
}

} // namespace

PreflightFailed::PreflightFailed(std::vector<std::string> problems)
    : std::runtime_error([&] {
          std::string text;
          for (const std::string& p : problems) text += (text.empty() ? "  " : "\n  ") + p;
          return text;
      }()),
      m_problems(std::move(problems)) {}

std::string workerBuild(const std::string& worker) {
    const std::vector<CommandResult> r = runCommands({{"sha256sum", worker}}, std::chrono::seconds(10));
    return r[0].exit_code == 0 ? firstLine(r[0].out).substr(0, r[0].out.find(' ')) : std::string();
}

std::vector<HostCheck> preflight(const ClusterProfile& cluster, const PreflightOptions& o) {
    const std::string worker = cluster.worker.empty() ? o.local_worker : cluster.worker;
    const std::string localBuild = o.local_build.empty() ? workerBuild(o.local_worker) : o.local_build;
    const TokenFile token(o.shared_folder);

    std::vector<HostCheck> checks;
    std::vector<std::vector<std::string>> commands;
    for (const std::string& entry : cluster.hosts) {
        HostCheck c;
        const std::optional<HostSlots> slots = parseHostSlots(entry);
        c.host = slots ? slots->name : entry;
        c.slot_count = slots ? slots->slot_count : 0;
        checks.push_back(c);
        SshOptions ssh;
        ssh.connect_timeout_s = o.timeout_s;
        // `timeout` there too: a check cut short here must not go on over there.
        commands.push_back(sshCommand(c.host, cluster.ssh,
                                      {"timeout", std::to_string(o.timeout_s * 2), "sh", "-c", kProbeScript,
                                       "preflight", worker, token.path()},
                                      ssh));
    }
    // ssh must answer within the timeout (ConnectTimeout); the check itself gets as long again.
    const std::vector<CommandResult> results = runCommands(commands, std::chrono::seconds(2 * o.timeout_s));

    int64_t slotsOffered = 0;
    for (size_t i = 0; i < checks.size(); ++i) {
        HostCheck& c = checks[i];
        const CommandResult& r = results[i];
        slotsOffered += c.slot_count;
        c.latency_ms = r.seconds * 1e3;
        if (!r.start_error.empty()) {
            c.problems.push_back(c.host + ": cannot run ssh (" + r.start_error + "); install openssh-client");
            continue;
        }
        if (r.timed_out) {
            c.problems.push_back(c.host + ": no answer over ssh within " + std::to_string(o.timeout_s) +
                                 " s; check that the host is up and reachable from here (ssh " + c.host + ")");
            continue;
        }
        if (r.exit_code == 255) {
            const std::string why = sshComplaint(r.err);
            c.problems.push_back(c.host + ": " + (why.empty() ? "ssh failed" : why) + "; " + sshRemedy(why, c.host));
            continue;
        }
        judgeHost(c, r, worker, localBuild, o, token);
    }
    if (o.processes > 0 && slotsOffered < o.processes && !checks.empty())
        checks.front().problems.push_back("the hosts offer " + std::to_string(slotsOffered) + " slots but the run needs " +
                                          std::to_string(o.processes) + " processes; add hosts or slots to " +
                                          cluster.source);
    return checks;
}

std::vector<std::string> slurmPreflight(const RunSpec& spec, int timeoutS) {
    const LaunchSpec& l = spec.launch;
    // One line per partition of Key=Value settings: its name, state, nodes and CPUs, and the
    // limits a job meets there (MaxNodes, MaxCPUsPerNode), which sinfo does not show.
    const std::vector<CommandResult> r =
        runCommands({{"scontrol", "show", "partition", "--oneliner"}}, std::chrono::seconds(timeoutS));
    if (!r[0].start_error.empty())
        return {"launch.target = \"slurm\": cannot run scontrol (" + r[0].start_error +
                "); install slurm-client, or run where Slurm's commands are"};
    if (r[0].timed_out || r[0].exit_code != 0)
        return {"launch.target = \"slurm\": Slurm does not answer (scontrol: " +
                (r[0].timed_out ? std::string("no answer within ") + std::to_string(timeoutS) + " s"
                                : firstLine(r[0].err.empty() ? r[0].out : r[0].err)) +
                "); check that slurmctld runs and SLURM_CONF names its slurm.conf"};
    std::vector<std::map<std::string, std::string>> partitions;
    std::istringstream in(r[0].out);
    for (std::string line; std::getline(in, line);) {
        std::map<std::string, std::string> kv = parseSlurmSettings(line);
        if (kv.count("PartitionName")) partitions.push_back(std::move(kv));
    }
    std::string names;
    const std::map<std::string, std::string>* chosen = nullptr;
    for (const auto& p : partitions) {
        const std::string& n = p.at("PartitionName");
        names += (names.empty() ? "" : ", ") + n;
        const bool isDefault = p.count("Default") && p.at("Default") == "YES";
        if ((l.partition.empty() && isDefault) || n == l.partition) chosen = &p;
    }
    if (!chosen)
        return {l.partition.empty()
                    ? "launch.partition is empty and this Slurm has no default partition; set one of " + names
                    : "launch.partition = \"" + l.partition + "\" is no partition of this Slurm; use one of " + names};
    const auto& p = *chosen;
    const std::string which = "partition " + p.at("PartitionName");
    std::vector<std::string> problems;
    if (p.count("State") && p.at("State") != "UP")
        problems.push_back("launch.partition: " + which + " is " + p.at("State") + ", so nothing would start there");
    const int64_t totalNodes = settingNumber(p, "TotalNodes"), totalCpus = settingNumber(p, "TotalCPUs");
    int64_t nodes = totalNodes;
    if (const int64_t most = settingNumber(p, "MaxNodes"); most >= 0 && (nodes < 0 || most < nodes)) nodes = most;
    int64_t nodeCpus = totalNodes > 0 && totalCpus > 0 ? totalCpus / totalNodes : -1;
    if (const int64_t most = settingNumber(p, "MaxCPUsPerNode"); most >= 0 && (nodeCpus < 0 || most < nodeCpus))
        nodeCpus = most;
    const int64_t perTask = std::max<int64_t>(1, l.threads_per_rank);
    const int64_t wanted = spec.processCount() * perTask;
    if (nodes >= 0 && l.nodes > nodes)
        problems.push_back("launch.nodes = " + std::to_string(l.nodes) + " but " + which + " has " +
                           std::to_string(nodes) + " node(s); ask for at most " + std::to_string(nodes));
    if (nodeCpus >= 0 && l.tasks_per_node > 0 && l.tasks_per_node * perTask > nodeCpus)
        problems.push_back("launch.tasks_per_node = " + std::to_string(l.tasks_per_node) + " (x " +
                           std::to_string(perTask) + " CPUs each) but a node of " + which + " has " +
                           std::to_string(nodeCpus) + " CPUs");
    const int64_t usable = nodes >= 0 && nodeCpus >= 0 ? nodes * nodeCpus : totalCpus;
    if (usable >= 0 && wanted > usable)
        problems.push_back("parallel: dp * tp * pp = " + std::to_string(spec.processCount()) + " processes of " +
                           std::to_string(perTask) + " CPU(s) each need " + std::to_string(wanted) + " CPUs, but " +
                           which + " has " + std::to_string(usable) + "; use a larger partition or fewer ranks");
    checkGpus(l, p, totalNodes, which, problems);
    return problems;
}

std::vector<std::string> preflightProblems(const std::vector<HostCheck>& checks) {
    std::vector<std::string> out;
    for (const HostCheck& c : checks) out.insert(out.end(), c.problems.begin(), c.problems.end());
    return out;
}

} // namespace parallax
