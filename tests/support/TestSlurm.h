#pragma once

// A real Slurm on this machine: Debian's slurmctld and slurmd (22.05) from a slurm.conf of the
// fixture's own in a folder of its own (ports off the defaults, state, spool, logs and pid files
// inside it, auth/none and cred/none, so no munge). The nodes are this machine (one slurmd, or
// several that share it, each with a port of its own), or the hosts of a TestHosts fixture (one
// slurmd inside each host's network and UTS namespaces, so that the ranks of a job have hosts
// and addresses of their own, as on the nodes of a cluster). Either way srun --mpi=pmix starts
// Open MPI ranks across the nodes: each node has a TmpFS of its own for PMIx's folders.
//
// While a fixture lives, the test process's environment has SLURM_CONF set to its slurm.conf and
// no other SLURM_* variable (those of a Slurm job the tests may run inside would make srun and
// sbatch speak of that job): whatever the tests start (srun, sbatch, parallax-cli) reaches this
// Slurm, as from a shell that exported SLURM_CONF. Hence one fixture per process at a time.
//
// Slurm keeps no accounting here: sacct needs slurmdbd and a database, and without them answers
// "Slurm accounting storage is disabled". A finished job stays in `scontrol show job` for
// MinJobAge (300 s), and jobCompletionLog() has a line for every job that ended.

#include <chrono>
#include <string>
#include <sys/types.h>
#include <vector>

namespace parallax::testing {

class TestHosts;

struct SlurmCommandResult {
    int exitCode = -1;     // 128 + signal when killed
    std::string output;    // stdout and stderr interleaved
    bool timedOut = false; // killed after the timeout; output says so too
};

class TestSlurm {
public:
    // `nodes` slurmds on this machine; one node is named as this machine is (hostname -s), more
    // are "<host>-1", "<host>-2", ... on the same machine. Each node offers `cpusPerNode` CPUs (0:
    // this machine's count, at least 4, so that four ranks fit on a smaller machine as well).
    // Waits until sinfo shows every node idle; throws std::runtime_error naming the log to read,
    // after stopping what it started. First removes what fixtures of processes that died left.
    explicit TestSlurm(int nodes = 1, int cpusPerNode = 0);
    // One node per test host, named as the host, its slurmd in the host's namespaces (joined through
    // its sshd, which must run). slurmctld runs on this machine and the hosts reach it at the
    // bridge's address. Destroy this fixture before `hosts`.
    explicit TestSlurm(TestHosts& hosts, int cpusPerNode = 0);
    // Cancels every job, stops the slurmds and slurmctld (SIGTERM, SIGKILL after a while), kills
    // what is left of their job steps, restores the environment and removes the folder.
    ~TestSlurm();
    TestSlurm(const TestSlurm&) = delete;
    TestSlurm& operator=(const TestSlurm&) = delete;

    // "" when a Slurm can be started here, else why not (not root, a package missing), for
    // GTEST_SKIP.
    static std::string available();

    const std::string& conf() const { return m_conf; }     // the slurm.conf (SLURM_CONF)
    const std::string& folder() const { return m_folder; } // conf, state, spool, logs
    const std::string& partition() const { return m_partition; } // "debug", every node, the default
    // "small": the first node and 1 CPU of it; jobs asking for more are refused at submission
    // (EnforcePartLimits=ALL).
    const std::string& smallPartition() const { return m_smallPartition; }
    const std::vector<std::string>& nodeNames() const { return m_nodeNames; }
    int cpusPerNode() const { return m_cpus; }
    int controllerPort() const { return m_controllerPort; }
    std::vector<int> slurmdPorts() const; // one per node; the same on every test host
    std::string controllerLog() const;
    std::string slurmdLog(int node) const;
    std::string jobCompletionLog() const; // jobcomp/filetxt: one line per ended job
    // How long the constructor took from writing slurm.conf to every node idle.
    std::chrono::milliseconds startupTime() const { return m_startup; }

    // Runs a Slurm command (argv[0] searched in PATH, e.g. {"srun", "-n", "2", "hostname"}) with
    // SLURM_CONF set, killing it (and what it started in its process group) after `timeout`.
    SlurmCommandResult run(const std::vector<std::string>& argv,
                           std::chrono::seconds timeout = std::chrono::seconds(60)) const;

    // Slurm's state of node i as sinfo prints it: "idle", "allocated", "mixed", "idle*" (not
    // responding), "down*", ...; "" when sinfo does not answer.
    std::string nodeState(int node) const;
    // Whether squeue lists no job (false also when it does not answer).
    bool queueEmpty() const;
    pid_t controllerPid() const { return m_controller; }
    pid_t slurmdPid(int node) const;
    // A fault: kills node i's slurmd (SIGKILL, as when the daemon crashes); its job steps go on.
    // slurmctld notices after SlurmdTimeout (10 s) and marks the node down.
    void stopSlurmd(int node);
    // Starts node i's slurmd again and waits until the node is back (idle, mixed or allocated).
    void startSlurmd(int node);

    // Every live process of the Slurm whose slurm.conf is `conf` (its daemons, job steps, their
    // tasks, and the srun and sbatch started with it), found by SLURM_CONF in their environment.
    static std::vector<pid_t> processesOf(const std::string& conf);
    // Whether nothing listens on TCP `port` of this machine (binding it succeeds).
    static bool portFree(int port);

private:
    struct Node {
        std::string name;
        std::string address;
        int port = 0;
        pid_t slurmd = 0;
        pid_t namespaceOf = 0; // a process in the host's namespaces (its sshd); 0 on this machine
    };

    void setUp();
    void tearDown() noexcept;
    void choosePorts();
    void writeConf();
    void startController();
    pid_t startDaemon(const std::vector<std::string>& argv, const std::string& outName, pid_t namespaceOf);
    void spawnSlurmd(int node);
    void waitUntilUp(std::chrono::seconds timeout);
    void waitForNode(int node, std::chrono::seconds timeout);
    std::string failureWithLogs(const std::string& what) const;
    const Node& node(int i) const;

    TestHosts* m_hosts = nullptr;
    std::string m_folder;
    std::string m_conf;
    std::string m_partition = "debug";
    std::string m_smallPartition = "small";
    std::string m_controllerHost;    // this machine's short name
    std::string m_controllerAddress; // where the slurmds reach slurmctld
    int m_controllerPort = 0;
    int m_slurmdPort = 0;            // the nodes' port when each is on a host of its own
    int m_cpus = 0;
    pid_t m_controller = 0;
    std::vector<Node> m_nodes;
    std::vector<std::string> m_nodeNames;
    std::vector<std::pair<std::string, std::string>> m_savedEnvironment; // SLURM_* before
    bool m_ownsEnvironment = false;
    std::chrono::milliseconds m_startup{0};
};

} // namespace parallax::testing
