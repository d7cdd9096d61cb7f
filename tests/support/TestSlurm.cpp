#include "tests/support/TestSlurm.h"

#include "tests/support/TestHosts.h"

#include "core/util/Files.h"
#include "core/util/HostName.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <functional>
#include <map>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sstream>
#include <stdexcept>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char** environ;

namespace parallax::testing {

namespace {

using Clock = std::chrono::steady_clock;

// Where Debian's packages put them (slurmctld, slurmd; slurm-client).
constexpr const char* kSlurmctld = "/usr/sbin/slurmctld";
constexpr const char* kSlurmd = "/usr/sbin/slurmd";
constexpr const char* kClients[] = {"/usr/bin/sinfo", "/usr/bin/squeue", "/usr/bin/scancel", "/usr/bin/srun",
                                    "/usr/bin/sbatch", "/usr/bin/scontrol"};
// In /tmp whatever TMPDIR says: slurmd's step sockets lie in the spool folder, and a socket's path
// has room for 107 characters only.
constexpr const char* kFolderParent = "/tmp";
constexpr const char* kFolderPrefix = "parallax-slurm-";
// Ports below Linux's default ephemeral range (32768-60999), far from Slurm's own (6817-6819).
constexpr int kFirstPort = 20000;
constexpr int kPortSpan = 12000;
// slurmd notices a lost slurmctld, and slurmctld a lost slurmd, only after these.
constexpr int kSlurmdTimeoutS = 10;
constexpr int kKillWaitS = 2;

std::atomic<unsigned> g_sequence{0};
// The environment holds one SLURM_CONF: one fixture at a time per process.
std::atomic<bool> g_fixtureLive{false};

int exitCodeOf(int status) {
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

bool processAlive(pid_t pid) {
    return ::kill(pid, 0) == 0 || errno == EPERM;
}

std::string shortHostName() {
    const std::string name = hostName();
    return name.substr(0, name.find('.'));
}

std::string lastLines(const std::string& path, size_t count) {
    std::string text;
    try {
        text = readFile(path);
    } catch (const FileError&) {
        return "  (" + path + " cannot be read)\n";
    }
    size_t at = text.size();
    for (size_t lines = 0; at > 0 && lines <= count;)
        if (text[--at] == '\n')
            ++lines;
    std::string out;
    std::istringstream in(text.substr(at));
    std::string line;
    while (std::getline(in, line))
        if (!line.empty())
            out += "  " + line + "\n";
    return out;
}

std::string trimmed(std::string text) {
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
        text.pop_back();
    return text;
}

// This process's environment without SLURM_* variables, with SLURM_CONF=conf.
std::vector<std::string> slurmEnvironment(const std::string& conf) {
    std::vector<std::string> out;
    for (char** e = environ; *e; ++e)
        if (std::strncmp(*e, "SLURM_", 6) != 0)
            out.emplace_back(*e);
    out.push_back("SLURM_CONF=" + conf);
    return out;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
    std::vector<char*> out;
    for (std::string& s : strings)
        out.push_back(s.data());
    out.push_back(nullptr);
    return out;
}

// What a child reports when it fails before exec.
struct ChildFailure {
    enum Step : int { None, JoinNet, JoinUts, Exec } step;
    int err;
};

struct Launch {
    std::vector<std::string> argv;
    std::vector<std::string> env;
    int output = -1;        // stdout and stderr go there
    pid_t namespaceOf = 0;  // join this process's network and UTS namespaces; 0: stay
};

// Starts launch.argv (argv[0] searched in PATH when it has no '/') in a process group of its own,
// with stdin from /dev/null. It dies with the thread that started it (PR_SET_PDEATHSIG), so that a
// test binary that is killed leaves no daemon listening. Started by fork and exec, not through a
// shell, so that nothing reads the arguments but the program. A step of the child that fails
// before exec (joining a namespace, exec itself) comes back through a pipe that exec closes, and
// is thrown here.
pid_t launch(Launch l) {
    int netns = -1, utsns = -1;
    if (l.namespaceOf != 0) {
        const std::string base = "/proc/" + std::to_string(l.namespaceOf) + "/ns/";
        netns = ::open((base + "net").c_str(), O_RDONLY | O_CLOEXEC);
        utsns = ::open((base + "uts").c_str(), O_RDONLY | O_CLOEXEC);
        if (netns < 0 || utsns < 0) {
            const int err = errno;
            if (netns >= 0) ::close(netns);
            if (utsns >= 0) ::close(utsns);
            throw std::runtime_error("test slurm: cannot open the namespaces of process " +
                                     std::to_string(l.namespaceOf) + " (" + base + "): " + errnoText(err));
        }
    }
    const int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    int report[2] = {-1, -1};
    if (null < 0 || ::pipe2(report, O_CLOEXEC) != 0) {
        const int err = errno;
        for (int fd : {netns, utsns, null})
            if (fd >= 0) ::close(fd);
        throw std::runtime_error("test slurm: cannot start " + l.argv.front() + ": " + errnoText(err));
    }
    std::vector<char*> argv = pointers(l.argv);
    std::vector<char*> envp = pointers(l.env);
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != parent)
            ::_exit(127);
        ::setpgid(0, 0);
        ::dup2(null, 0);
        ::dup2(l.output, 1);
        ::dup2(l.output, 2);
        ChildFailure failure{ChildFailure::None, 0};
        if (netns >= 0 && ::setns(netns, CLONE_NEWNET) != 0)
            failure = {ChildFailure::JoinNet, errno};
        else if (utsns >= 0 && ::setns(utsns, CLONE_NEWUTS) != 0)
            failure = {ChildFailure::JoinUts, errno};
        if (failure.step == ChildFailure::None) {
            // Descriptors the test process has open without O_CLOEXEC stay out of the daemons.
            ::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
            ::execvpe(argv[0], argv.data(), envp.data());
            failure = {ChildFailure::Exec, errno};
        }
        const ssize_t ignored = ::write(report[1], &failure, sizeof failure);
        (void)ignored;
        ::_exit(127);
    }
    const int forkErr = errno;
    for (int fd : {netns, utsns, null, report[1]})
        if (fd >= 0) ::close(fd);
    if (pid < 0) {
        ::close(report[0]);
        throw std::runtime_error("test slurm: fork failed: " + errnoText(forkErr));
    }
    ChildFailure failure{ChildFailure::None, 0};
    ssize_t n = 0;
    do
        n = ::read(report[0], &failure, sizeof failure);
    while (n < 0 && errno == EINTR);
    ::close(report[0]);
    if (n == static_cast<ssize_t>(sizeof failure)) {
        int status = 0;
        ::waitpid(pid, &status, 0);
        static const char* const steps[] = {"", "joining the network namespace", "joining the UTS namespace",
                                            "exec"};
        throw std::runtime_error("test slurm: cannot start " + l.argv.front() + ": " + steps[failure.step] + ": " +
                                 errnoText(failure.err));
    }
    return pid;
}

// Waits up to `grace` for child `pid` to end after `signal`, then SIGKILLs it; returns its exit
// code.
int endChild(pid_t pid, int signal, std::chrono::milliseconds grace) {
    ::kill(pid, signal);
    const auto end = Clock::now() + grace;
    int status = 0;
    while (::waitpid(pid, &status, WNOHANG) == 0) {
        if (Clock::now() > end) {
            ::kill(pid, SIGKILL);
            ::waitpid(pid, &status, 0);
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return exitCodeOf(status);
}

// Whether `pid` (a child of this process) has ended; reaps it and says how.
bool childEnded(pid_t pid, int& exitCode) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) != pid)
        return false;
    exitCode = exitCodeOf(status);
    return true;
}

// The SLURM_CONF of every live process that has one, from /proc (a zombie's environment cannot be
// read: it has ended).
std::vector<std::pair<pid_t, std::string>> slurmConfs() {
    std::vector<std::pair<pid_t, std::string>> out;
    std::vector<std::string> names;
    try {
        names = listDirectory("/proc");
    } catch (const FileError&) {
        return out;
    }
    const std::string key = "SLURM_CONF=";
    for (const std::string& name : names) {
        if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos)
            continue;
        const pid_t pid = static_cast<pid_t>(std::stol(name));
        if (pid == ::getpid())
            continue;
        std::string environment;
        try {
            environment = readFile("/proc/" + name + "/environ");
        } catch (const FileError&) {
            continue; // ended since
        }
        std::istringstream entries(environment);
        std::string e;
        while (std::getline(entries, e, '\0'))
            if (e.rfind(key, 0) == 0) {
                out.emplace_back(pid, e.substr(key.size()));
                break;
            }
    }
    return out;
}

// SIGKILLs every process whose SLURM_CONF `mine` says yes to until none is left (a step may start
// tasks while the first kills go out); gives up after 10 s.
void killProcessesOf(const std::function<bool(const std::string&)>& mine) {
    const auto end = Clock::now() + std::chrono::seconds(10);
    for (;;) {
        bool any = false;
        for (const auto& [pid, conf] : slurmConfs())
            if (mine(conf)) {
                ::kill(pid, SIGKILL);
                any = true;
            }
        if (!any || Clock::now() > end)
            return;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
}

// Whether `folder` (a path) is the folder of a fixture whose process has died:
// /tmp/parallax-slurm-<pid>-<sequence>.
bool folderOfDeadFixture(const std::string& folder) {
    if (parentPath(folder) != kFolderParent)
        return false;
    const std::string name = baseName(folder);
    const std::string prefix = kFolderPrefix;
    if (name.rfind(prefix, 0) != 0)
        return false;
    const std::string rest = name.substr(prefix.size());
    const size_t dash = rest.find('-');
    if (dash == 0 || dash == std::string::npos || dash > 9 || rest.find_first_not_of("0123456789") != dash)
        return false;
    const pid_t creator = static_cast<pid_t>(std::stol(rest.substr(0, dash)));
    return creator != ::getpid() && !processAlive(creator);
}

// What fixtures of processes that died (a test binary killed mid-test) left: their Slurm's steps,
// tasks and commands (the daemons died with them), found by SLURM_CONF, since their folder may be
// gone already; then their folders.
void removeLeftovers() {
    killProcessesOf([](const std::string& conf) { return folderOfDeadFixture(parentPath(conf)); });
    std::vector<std::string> entries;
    try {
        entries = listDirectory(kFolderParent);
    } catch (const FileError&) {
        return;
    }
    for (const std::string& name : entries) {
        const std::string folder = joinPath(kFolderParent, name);
        if (!folderOfDeadFixture(folder))
            continue;
        try {
            removeAll(folder);
        } catch (const FileError& e) {
            std::fprintf(stderr, "test slurm: cannot remove the leftover %s: %s\n", folder.c_str(), e.what());
        }
    }
}

// The first line of `text`, trimmed.
std::string firstLine(const std::string& text) {
    return trimmed(text.substr(0, text.find('\n')));
}

} // namespace

std::string TestSlurm::available() {
    if (::geteuid() != 0)
        return "a test Slurm needs root (SlurmUser=root, slurmd starts job steps as any user); uid is " +
               std::to_string(::geteuid());
    if (::access(kSlurmctld, X_OK) != 0)
        return std::string("no ") + kSlurmctld + " (Debian package slurmctld; packaging/deps.sh installs it)";
    if (::access(kSlurmd, X_OK) != 0)
        return std::string("no ") + kSlurmd + " (Debian package slurmd; packaging/deps.sh installs it)";
    for (const char* client : kClients)
        if (::access(client, X_OK) != 0)
            return std::string("no ") + client + " (Debian package slurm-client; packaging/deps.sh installs it)";
    return "";
}

TestSlurm::TestSlurm(int nodes, int cpusPerNode) {
    if (nodes < 1 || nodes > 16)
        throw std::invalid_argument("test slurm: nodes must be 1 to 16, not " + std::to_string(nodes));
    const std::string host = shortHostName();
    m_controllerHost = host;
    m_controllerAddress = "127.0.0.1";
    for (int i = 0; i < nodes; ++i) {
        Node n;
        n.name = nodes == 1 ? host : host + "-" + std::to_string(i + 1);
        n.address = "127.0.0.1";
        m_nodes.push_back(n);
    }
    m_cpus = cpusPerNode;
    setUp();
}

TestSlurm::TestSlurm(TestHosts& hosts, int cpusPerNode) : m_hosts(&hosts) {
    m_controllerHost = shortHostName();
    m_controllerAddress = hosts.bridgeAddress();
    for (size_t i = 0; i < hosts.names().size(); ++i) {
        Node n;
        n.name = hosts.names()[i];
        n.address = hosts.address(static_cast<int>(i));
        m_nodes.push_back(n);
    }
    m_cpus = cpusPerNode;
    setUp();
}

TestSlurm::~TestSlurm() {
    tearDown();
}

void TestSlurm::setUp() {
    const std::string why = available();
    if (!why.empty())
        throw std::runtime_error("a test Slurm cannot be started here: " + why);
    if (g_fixtureLive.exchange(true))
        throw std::logic_error("test slurm: another TestSlurm of this process is alive (SLURM_CONF names one)");
    m_ownsEnvironment = true;
    try {
        if (m_cpus <= 0)
            m_cpus = std::max(4, static_cast<int>(std::thread::hardware_concurrency()));
        for (const Node& n : m_nodes)
            m_nodeNames.push_back(n.name);
        removeLeftovers();
        const std::string folder = joinPath(kFolderParent, kFolderPrefix + std::to_string(::getpid()) + "-" +
                                                               std::to_string(g_sequence.fetch_add(1)));
        if (::mkdir(folder.c_str(), 0755) != 0)
            throw std::runtime_error("test slurm: cannot make " + folder + ": " + errnoText(errno));
        m_folder = folder;
        m_conf = joinPath(m_folder, "slurm.conf");

        for (char** e = environ; *e; ++e)
            if (std::strncmp(*e, "SLURM_", 6) == 0) {
                const std::string entry = *e;
                const size_t eq = entry.find('=');
                m_savedEnvironment.emplace_back(entry.substr(0, eq),
                                                eq == std::string::npos ? "" : entry.substr(eq + 1));
            }
        for (const auto& [name, value] : m_savedEnvironment)
            ::unsetenv(name.c_str());
        ::setenv("SLURM_CONF", m_conf.c_str(), 1);

        const auto start = Clock::now();
        choosePorts();
        writeConf();
        startController();
        for (size_t i = 0; i < m_nodes.size(); ++i)
            spawnSlurmd(static_cast<int>(i)); // waited for below, all at once
        waitUntilUp(std::chrono::seconds(60));
        m_startup = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
    } catch (...) {
        tearDown();
        throw;
    }
}

void TestSlurm::choosePorts() {
    const unsigned start = static_cast<unsigned>(::getpid()) * 131u + g_sequence.load() * 17u;
    std::vector<int> chosen;
    // Each slurmd on this machine needs a port of its own; on test hosts they share one.
    const size_t needed = 1 + (m_hosts ? 1 : m_nodes.size());
    for (unsigned k = 0; k < static_cast<unsigned>(kPortSpan) && chosen.size() < needed; ++k) {
        const int port = kFirstPort + static_cast<int>((start + k * 7919u) % kPortSpan);
        if (std::find(chosen.begin(), chosen.end(), port) == chosen.end() && portFree(port))
            chosen.push_back(port);
    }
    if (chosen.size() < needed)
        throw std::runtime_error("test slurm: no free TCP ports in " + std::to_string(kFirstPort) + "-" +
                                 std::to_string(kFirstPort + kPortSpan - 1));
    m_controllerPort = chosen[0];
    m_slurmdPort = chosen[1];
    for (size_t i = 0; i < m_nodes.size(); ++i)
        m_nodes[i].port = m_hosts ? m_slurmdPort : chosen[1 + i];
}

void TestSlurm::writeConf() {
    const std::string& f = m_folder;
    createDirectories(joinPath(f, "state"));
    for (const Node& n : m_nodes) {
        createDirectories(joinPath(f, "spool-" + n.name));
        createDirectories(joinPath(f, "tmp-" + n.name));
    }
    std::ostringstream c;
    c << "# A test Slurm: everything of it lies in " << f << ".\n"
      << "ClusterName=parallaxtest\n"
      // The name must be this machine's (slurmctld checks); the address is where slurmctld is
      // reached, so that nothing is looked up.
      << "SlurmctldHost=" << m_controllerHost << "(" << m_controllerAddress << ")\n"
      << "SlurmctldPort=" << m_controllerPort << "\n"
      << "SlurmdPort=" << m_slurmdPort << "\n"
      << "SlurmUser=root\n"
      << "SlurmdUser=root\n"
      << "StateSaveLocation=" << f << "/state\n"
      // %n: the node's name, for the nodes that share this machine's folders.
      << "SlurmdSpoolDir=" << f << "/spool-%n\n"
      << "SlurmctldPidFile=" << f << "/slurmctld.pid\n"
      << "SlurmdPidFile=" << f << "/slurmd-%n.pid\n"
      << "SlurmctldLogFile=" << f << "/slurmctld.log\n"
      << "SlurmdLogFile=" << f << "/slurmd-%n.log\n"
      // Slurm's PMIx plugin makes each step's folder in TmpFS: one per node, or the nodes' steps
      // (same job and step ids) collide in a shared /tmp.
      << "TmpFS=" << f << "/tmp-%n\n"
      << "AuthType=auth/none\n"
      << "CredType=cred/none\n"
      << "ProctrackType=proctrack/pgid\n"
      << "TaskPlugin=task/none\n"
      << "SelectType=select/cons_tres\n"
      << "SelectTypeParameters=CR_CPU\n"
      << "MpiDefault=none\n"
      << "ReturnToService=2\n"
      // The nodes offer the CPUs written here even where the machine has fewer.
      << "SlurmdParameters=config_overrides\n"
      << "SlurmdTimeout=" << kSlurmdTimeoutS << "\n"
      << "KillWait=" << kKillWaitS << "\n"
      // A job asking for more than its partition has is refused when submitted, not left pending.
      << "EnforcePartLimits=ALL\n"
      // No slurmdbd: sacct cannot answer. Ended jobs stay in `scontrol show job` for MinJobAge
      // and get a line in the job completion log.
      << "AccountingStorageType=accounting_storage/none\n"
      << "JobAcctGatherType=jobacct_gather/none\n"
      << "JobCompType=jobcomp/filetxt\n"
      << "JobCompLoc=" << f << "/jobcomp.log\n"
      << "SlurmctldDebug=info\n"
      << "SlurmdDebug=info\n";
    std::string names;
    for (const Node& n : m_nodes) {
        c << "NodeName=" << n.name;
        if (!m_hosts)
            c << " NodeHostname=" << m_controllerHost << " Port=" << n.port;
        c << " NodeAddr=" << n.address << " CPUs=" << m_cpus << " State=UNKNOWN\n";
        names += (names.empty() ? "" : ",") + n.name;
    }
    c << "PartitionName=" << m_partition << " Nodes=" << names << " Default=YES MaxTime=INFINITE State=UP\n"
      << "PartitionName=" << m_smallPartition << " Nodes=" << m_nodes.front().name
      << " MaxNodes=1 MaxCPUsPerNode=1 MaxTime=INFINITE State=UP\n";
    writeFileAtomic(m_conf, c.str());
}

void TestSlurm::startController() {
    // -D: in the foreground, a child of this process; -c: no state of an earlier start.
    m_controller = startDaemon({kSlurmctld, "-D", "-c", "-f", m_conf}, "slurmctld.out", 0);
}

pid_t TestSlurm::startDaemon(const std::vector<std::string>& argv, const std::string& outName, pid_t namespaceOf) {
    // What a daemon prints before its log file is open (a slurm.conf it cannot read, say).
    const std::string out = joinPath(m_folder, outName);
    const int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0)
        throw std::runtime_error("test slurm: cannot write " + out + ": " + errnoText(errno));
    try {
        const pid_t pid = launch({argv, slurmEnvironment(m_conf), fd, namespaceOf});
        ::close(fd);
        return pid;
    } catch (...) {
        ::close(fd);
        throw;
    }
}

void TestSlurm::startSlurmd(int i) {
    spawnSlurmd(i);
    waitForNode(i, std::chrono::seconds(60));
}

void TestSlurm::spawnSlurmd(int i) {
    node(i);
    Node& n = m_nodes[static_cast<size_t>(i)];
    if (n.slurmd != 0)
        throw std::logic_error("test slurm: the slurmd of " + n.name + " runs already");
    if (m_hosts) {
        n.namespaceOf = m_hosts->sshdPid(i);
        if (n.namespaceOf == 0)
            throw std::runtime_error("test slurm: the sshd of test host " + n.name +
                                     " is stopped, so its namespaces cannot be joined to start slurmd there");
    }
    n.slurmd = startDaemon({kSlurmd, "-D", "-N", n.name, "-f", m_conf}, "slurmd-" + n.name + ".out", n.namespaceOf);
}

void TestSlurm::stopSlurmd(int i) {
    node(i);
    Node& n = m_nodes[static_cast<size_t>(i)];
    if (n.slurmd == 0)
        return;
    endChild(n.slurmd, SIGKILL, std::chrono::milliseconds(0));
    n.slurmd = 0;
}

void TestSlurm::waitUntilUp(std::chrono::seconds timeout) {
    const auto end = Clock::now() + timeout;
    std::string states;
    for (;;) {
        int code = 0;
        if (childEnded(m_controller, code)) {
            m_controller = 0;
            throw std::runtime_error(
                failureWithLogs("slurmctld ended (exit code " + std::to_string(code) + ") while starting"));
        }
        for (Node& n : m_nodes)
            if (childEnded(n.slurmd, code)) {
                n.slurmd = 0;
                throw std::runtime_error(failureWithLogs("the slurmd of " + n.name + " ended (exit code " +
                                                         std::to_string(code) + ") while starting"));
            }
        const SlurmCommandResult r = run({"sinfo", "-h", "-N", "-o", "%N %T"}, std::chrono::seconds(10));
        std::map<std::string, std::string> state;
        std::istringstream lines(r.output);
        std::string name, value;
        while (lines >> name >> value)
            state[name] = value;
        bool allIdle = r.exitCode == 0;
        states.clear();
        for (const Node& n : m_nodes) {
            const auto it = state.find(n.name);
            const std::string s = it == state.end() ? std::string("(not listed)") : it->second;
            allIdle = allIdle && s == "idle";
            states += (states.empty() ? "" : ", ") + n.name + " " + s;
        }
        if (allIdle)
            return;
        if (Clock::now() > end)
            throw std::runtime_error(failureWithLogs(
                "not every node is idle after " + std::to_string(timeout.count()) + " s (sinfo exit code " +
                std::to_string(r.exitCode) + ": " + (r.exitCode == 0 ? states : trimmed(r.output)) + ")"));
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
}

void TestSlurm::waitForNode(int i, std::chrono::seconds timeout) {
    const Node& n = node(i);
    const auto end = Clock::now() + timeout;
    std::string state;
    for (;;) {
        state = nodeState(i);
        if (state == "idle" || state == "mixed" || state == "allocated")
            return;
        int code = 0;
        if (n.slurmd != 0 && childEnded(n.slurmd, code)) {
            m_nodes[static_cast<size_t>(i)].slurmd = 0;
            throw std::runtime_error(failureWithLogs("the slurmd of " + n.name + " ended (exit code " +
                                                     std::to_string(code) + ") while starting"));
        }
        if (Clock::now() > end)
            throw std::runtime_error(failureWithLogs("node " + n.name + " is \"" + state + "\", not back, after " +
                                                     std::to_string(timeout.count()) + " s"));
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
}

bool TestSlurm::queueEmpty() const {
    const SlurmCommandResult q = run({"squeue", "-h"});
    return q.exitCode == 0 && q.output.find_first_not_of(" \n") == std::string::npos;
}

std::string TestSlurm::nodeState(int i) const {
    const SlurmCommandResult r = run({"sinfo", "-h", "-N", "-n", node(i).name, "-o", "%T"}, std::chrono::seconds(10));
    return r.exitCode == 0 ? firstLine(r.output) : std::string();
}

std::string TestSlurm::failureWithLogs(const std::string& what) const {
    std::string text = "test slurm (" + m_conf + "): " + what + "\n" + controllerLog() + ", last lines:\n" +
                       lastLines(controllerLog(), 15) + lastLines(joinPath(m_folder, "slurmctld.out"), 5);
    for (size_t i = 0; i < m_nodes.size(); ++i)
        text += slurmdLog(static_cast<int>(i)) + ", last lines:\n" + lastLines(slurmdLog(static_cast<int>(i)), 10) +
                lastLines(joinPath(m_folder, "slurmd-" + m_nodes[i].name + ".out"), 5);
    return text;
}

SlurmCommandResult TestSlurm::run(const std::vector<std::string>& argv, std::chrono::seconds timeout) const {
    if (argv.empty())
        throw std::invalid_argument("test slurm: run() needs a command");
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0)
        throw std::runtime_error("test slurm: pipe failed: " + errnoText(errno));
    pid_t pid = 0;
    try {
        pid = launch({argv, slurmEnvironment(m_conf), fds[1], 0});
    } catch (...) {
        ::close(fds[0]);
        ::close(fds[1]);
        throw;
    }
    ::close(fds[1]);
    SlurmCommandResult r;
    const auto end = Clock::now() + timeout;
    char buf[65536];
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now()).count();
        if (left <= 0 && !r.timedOut) {
            // The whole process group: what the command started too, so that the pipe closes.
            ::kill(-pid, SIGKILL);
            r.timedOut = true;
        }
        pollfd p{fds[0], POLLIN, 0};
        const int ready = ::poll(&p, 1, r.timedOut ? 1000 : static_cast<int>(std::min<long long>(left, 1000)));
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready == 0) {
            if (r.timedOut)
                break; // something outside the group holds the pipe; the command itself is dead
            continue;
        }
        const ssize_t n = ::read(fds[0], buf, sizeof buf);
        if (n > 0)
            r.output.append(buf, static_cast<size_t>(n));
        else if (n == 0 || errno != EINTR)
            break;
    }
    ::close(fds[0]);
    int status = 0;
    ::waitpid(pid, &status, 0);
    r.exitCode = exitCodeOf(status);
    if (r.timedOut)
        r.output += "\n(test slurm: " + argv.front() + " killed after " + std::to_string(timeout.count()) + " s)\n";
    return r;
}

std::vector<int> TestSlurm::slurmdPorts() const {
    std::vector<int> out;
    for (const Node& n : m_nodes)
        out.push_back(n.port);
    return out;
}

std::string TestSlurm::controllerLog() const {
    return joinPath(m_folder, "slurmctld.log");
}

std::string TestSlurm::slurmdLog(int i) const {
    return joinPath(m_folder, "slurmd-" + node(i).name + ".log");
}

std::string TestSlurm::jobCompletionLog() const {
    return joinPath(m_folder, "jobcomp.log");
}

pid_t TestSlurm::slurmdPid(int i) const {
    return node(i).slurmd;
}

const TestSlurm::Node& TestSlurm::node(int i) const {
    if (i < 0 || static_cast<size_t>(i) >= m_nodes.size())
        throw std::out_of_range("test slurm: no node " + std::to_string(i) + " of " + std::to_string(m_nodes.size()));
    return m_nodes[static_cast<size_t>(i)];
}

std::vector<pid_t> TestSlurm::processesOf(const std::string& conf) {
    std::vector<pid_t> out;
    for (const auto& [pid, value] : slurmConfs())
        if (value == conf)
            out.push_back(pid);
    return out;
}

bool TestSlurm::portFree(int port) {
    const int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return false;
    // As Slurm binds: connections of an earlier listener waiting out TIME_WAIT do not count.
    const int one = 1;
    ::setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(static_cast<uint16_t>(port));
    sa.sin_addr.s_addr = htonl(INADDR_ANY);
    const bool free = ::bind(s, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0 && ::listen(s, 1) == 0;
    ::close(s);
    return free;
}

void TestSlurm::tearDown() noexcept {
    auto attempt = [this](const char* what, const std::function<void()>& step) {
        try {
            step();
        } catch (const std::exception& e) {
            std::fprintf(stderr, "test slurm %s: teardown: %s: %s\n", m_folder.c_str(), what, e.what());
        }
    };
    int code = 0;
    if (m_controller != 0 && !childEnded(m_controller, code)) {
        attempt("cancelling the jobs", [this] {
            const SlurmCommandResult jobs = run({"squeue", "-h", "-o", "%A"}, std::chrono::seconds(10));
            std::vector<std::string> cancel = {"scancel"};
            std::istringstream ids(jobs.output);
            std::string id;
            while (jobs.exitCode == 0 && ids >> id)
                cancel.push_back(id);
            if (cancel.size() == 1)
                return;
            run(cancel, std::chrono::seconds(10));
            // Their steps end after KillWait; then the slurmds may go.
            const auto end = Clock::now() + std::chrono::seconds(kKillWaitS + 8);
            while (Clock::now() < end) {
                const SlurmCommandResult left = run({"squeue", "-h", "-o", "%A"}, std::chrono::seconds(5));
                if (left.exitCode != 0 || trimmed(left.output).empty())
                    break;
                std::this_thread::sleep_for(std::chrono::milliseconds(100));
            }
        });
    } else {
        m_controller = 0;
    }
    // The daemons at once, then each waited for: slurmctld saves its state (a second or so).
    for (const Node& n : m_nodes)
        if (n.slurmd != 0)
            ::kill(n.slurmd, SIGTERM);
    if (m_controller != 0)
        ::kill(m_controller, SIGTERM);
    for (Node& n : m_nodes)
        if (n.slurmd != 0) {
            endChild(n.slurmd, SIGTERM, std::chrono::seconds(10));
            n.slurmd = 0;
        }
    if (m_controller != 0) {
        endChild(m_controller, SIGTERM, std::chrono::seconds(10));
        m_controller = 0;
    }
    if (!m_conf.empty())
        attempt("killing what is left of the job steps",
                [this] { killProcessesOf([this](const std::string& conf) { return conf == m_conf; }); });
    if (m_ownsEnvironment) {
        ::unsetenv("SLURM_CONF");
        for (const auto& [name, value] : m_savedEnvironment)
            ::setenv(name.c_str(), value.c_str(), 1);
        m_savedEnvironment.clear();
        m_ownsEnvironment = false;
        g_fixtureLive = false;
    }
    if (!m_folder.empty())
        attempt("removing its folder", [this] { removeAll(m_folder); });
}

} // namespace parallax::testing
