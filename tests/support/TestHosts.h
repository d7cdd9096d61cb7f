#pragma once

// Test hosts on this machine: each one a network namespace with an address of its own on a private
// bridge, a hostname of its own (a UTS namespace) and an sshd that lets root in with a generated key.
// The filesystem is shared by all of them, as on a cluster with NFS: the same path names the same
// file on every host. Nothing here touches root's ~/.ssh or /etc/ssh, and no traffic leaves the
// bridge: the fixture's ssh config names every host by its address, /etc/hosts has a line for each
// (removed at teardown) so that name lookups stay on this machine, and mpirunArgs() keeps Open
// MPI's out-of-band and TCP traffic on the bridge's subnet.

#include "tests/support/Process.h"

#include <string>
#include <sys/types.h>
#include <vector>

namespace parallax::testing {

// A process running inside a test host's network namespace.
struct HostProcess {
    pid_t pid = 0;
    std::string command; // its command line, arguments separated by spaces
};

class TestHosts {
public:
    // Makes `count` hosts (1 to 26); throws std::runtime_error naming the step that failed, after
    // removing what it had made. Also removes what fixtures of processes that died left behind.
    explicit TestHosts(int count);
    // Kills every process in the hosts' namespaces and removes the namespaces, veths, the bridge,
    // the /etc/hosts lines and the folder.
    ~TestHosts();
    TestHosts(const TestHosts&) = delete;
    TestHosts& operator=(const TestHosts&) = delete;

    // "" when test hosts can be made here, else why not (not root, a program missing, namespaces
    // refused), for GTEST_SKIP.
    static std::string available();

    const std::vector<std::string>& names() const { return m_names; }
    const std::string& name(int i) const;
    std::string address(int i) const;       // e.g. 10.57.12.11
    std::string subnet() const;             // e.g. 10.57.12.0/24
    std::string bridgeAddress() const;      // this machine's side of the bridge, e.g. 10.57.12.1
    const std::string& bridge() const { return m_bridge; }
    const std::string& folder() const { return m_folder; } // keys, configs, sshd logs
    const std::string& sshConfigPath() const { return m_sshConfig; }
    const std::string& identityPath() const { return m_identity; }

    // mpirun (Open MPI 4.1) options for a run on these hosts: ssh with this fixture's config, and
    // the out-of-band and TCP transports on the bridge's subnet only.
    std::vector<std::string> mpirunArgs() const;

    // Runs argv on host i over ssh (each argument quoted for the remote shell).
    ProcessResult run(int i, const std::vector<std::string>& argv) const;
    // The processes in host i's namespace (sshd, and whatever ssh sessions started there).
    std::vector<HostProcess> processes(int i) const;

    // The peers ("address:port") of host i's TCP connections, from its namespace's /proc/net/tcp:
    // where what runs there talks to.
    std::vector<std::string> tcpPeers(int i) const;
    // The pid of host i's sshd listener; 0 while it is stopped.
    pid_t sshdPid(int i) const;
    // Ends host i's sshd listener (sessions already open go on, as when a daemon is stopped), so
    // that new connections are refused; startSshd starts it again.
    void stopSshd(int i);
    void startSshd(int i);
    // Every new ssh session to host i waits `seconds` before its command runs, as behind a heavy
    // login shell on a loaded host (sshd's ForceCommand: a script that sleeps, then runs the
    // command asked for); 0 makes logins quick again. Restarts host i's sshd.
    void slowLogins(int i, double seconds);
    // Takes host i's interface down: packets to and from it are dropped, so connections time out
    // (every host's neighbours are fixed, so nothing answers "no route to host" either).
    void linkDown(int i);
    void linkUp(int i);
    // Delays every packet host i sends by `ms` (tc netem); 0 removes the delay. Throws with
    // delayUnavailable()'s reason where that is not "".
    void delay(int i, int ms);
    // "" when delay() works here, else why not (no tc, a kernel without netem).
    std::string delayUnavailable() const;

private:
    struct Host {
        std::string name;
        std::string veth;      // the end on the bridge
        std::string innerMac;  // eth0 inside the namespace
        std::string outerMac;
        pid_t sshd = 0;
        std::string force_command; // sshd's ForceCommand (slowLogins), empty: none
        // What this fixture made, and so removes (a name that existed already is not its own).
        bool madeNamespace = false;
        bool madeVeth = false;
    };

    void setUp(int count);
    void tearDown() noexcept;
    void writeKeysAndConfigs();
    void chooseSubnet();
    void makeNetwork();
    void waitForSshd(int i);
    const Host& host(int i) const;
    std::string inSubnet(int host) const; // 10.x.y.<host>

    std::string m_base;     // pxt<pid>s<seq>: every name of this fixture starts with it
    std::string m_bridge;
    std::string m_folder;
    std::string m_sshConfig;
    std::string m_identity;
    std::string m_bridgeMac;
    unsigned m_sequence = 0; // of this process's fixtures, modulo 100
    unsigned m_net = 0;     // the subnet is 10.(m_net >> 8).(m_net & 255).0/24
    bool m_madeBridge = false;
    bool m_madeFolder = false;
    bool m_addedHostsLines = false;
    std::vector<Host> m_hosts;
    std::vector<std::string> m_names;
};

} // namespace parallax::testing
