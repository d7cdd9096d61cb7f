#include "core/spec/ClusterProfile.h"
#include "core/spec/SpecIO.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace parallax {
namespace {

namespace fs = std::filesystem;

std::string errorOf(const std::string& text) {
    try {
        parseClusterProfile(text, "lab.toml");
    } catch (const SpecError& e) {
        return e.what();
    }
    return "";
}

TEST(ClusterProfile, TheExampleReadsAndEverySettingRoundsUp) {
    const ClusterProfile example =
        readClusterProfile(std::string(PARALLAX_TEST_SOURCE_DIR) + "/resources/clusters/example.toml");
    EXPECT_EQ(example.name, "example");
    EXPECT_EQ(example.hosts, (std::vector<std::string>{"node1:8", "node2:8"}));

    ::setenv("HOME", "/home/alice", 1);
    const ClusterProfile p = parseClusterProfile(R"(
hosts = ["a:2", "b.lab:4"]
worker = "~/parallax/bin/parallax-worker"
[ssh]
user = "alice"
port = 2222
identity_file = "~/.ssh/id_lab"
jump_host = "login"
config_file = "/etc/lab/ssh_config"
options = ["ServerAliveInterval=5"]
[env]
NCCL_SOCKET_IFNAME = "ib0"
[mca]
btl_tcp_if_include = "10.1.0.0/16"
)",
                                                 "/etc/parallax/clusters/lab.toml");
    EXPECT_EQ(p.name, "lab");
    EXPECT_EQ(p.worker, "/home/alice/parallax/bin/parallax-worker");
    EXPECT_EQ(p.ssh.user, "alice");
    EXPECT_EQ(p.ssh.port, 2222);
    EXPECT_EQ(p.ssh.identity_file, "/home/alice/.ssh/id_lab");
    EXPECT_EQ(p.ssh.jump_host, "login");
    EXPECT_EQ(p.ssh.config_file, "/etc/lab/ssh_config");
    EXPECT_EQ(p.ssh.options, (std::vector<std::string>{"ServerAliveInterval=5"}));
    EXPECT_EQ(p.env.at("NCCL_SOCKET_IFNAME"), "ib0");
    EXPECT_EQ(p.mca.at("btl_tcp_if_include"), "10.1.0.0/16");
}

TEST(ClusterProfile, MistakesNameTheFileTheKeyAndTheFix) {
    EXPECT_NE(errorOf("").find("lab.toml: hosts is missing or empty"), std::string::npos);
    EXPECT_NE(errorOf("hosts = [\"a\"]").find("lab.toml: hosts[0] must be \"name:slots\""), std::string::npos);
    EXPECT_NE(errorOf("hosts = [\"a:1\"]\nhost = 3").find("host is not a cluster profile setting; did you mean hosts?"),
              std::string::npos)
        << errorOf("hosts = [\"a:1\"]\nhost = 3");
    EXPECT_NE(errorOf("hosts = [\"a:1\"]\n[ssh]\nport = 70000").find("ssh.port must be a port number"),
              std::string::npos);
    EXPECT_NE(errorOf("hosts = [\"a:1\"]\n[ssh]\nuser = \"-oProxyCommand=x\"").find("plain names"), std::string::npos);
    EXPECT_NE(errorOf("hosts = [\"a:1\"]\n[ssh]\noptions = [\"-v\"]").find("Key=Value"), std::string::npos);
    EXPECT_NE(errorOf("hosts = [\"a:1\"]\n[env]\n\"A B\" = \"1\"").find("env.A B is not a valid environment"),
              std::string::npos);
    EXPECT_NE(errorOf("hosts = [").find("lab.toml:"), std::string::npos);
}

TEST(ClusterProfile, FoundByNameInTheProfileFoldersOrByPath) {
    char tmpl[] = "/tmp/parallax-clusters-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    const fs::path dir = tmpl;
    std::ofstream(dir / "lab.toml") << "hosts = [\"n1:1\", \"n2:1\"]\n";
    ::setenv("PARALLAX_CLUSTERS", dir.c_str(), 1);
    EXPECT_EQ(findClusterProfile("lab").hosts.size(), 2u);
    EXPECT_EQ(findClusterProfile((dir / "lab.toml").string()).name, "lab");
    EXPECT_EQ(clusterProfileFiles(), (std::vector<std::string>{(dir / "lab.toml").string()}));
    try {
        findClusterProfile("nowhere");
        ADD_FAILURE() << "a missing profile was found";
    } catch (const SpecError& e) {
        EXPECT_NE(std::string(e.what()).find("there is no cluster profile nowhere.toml in " + dir.string()),
                  std::string::npos)
            << e.what();
    }
    RunSpec spec;
    spec.launch.target = Target::Hosts;
    spec.launch.cluster = "lab";
    EXPECT_EQ(resolveHosts(spec).source, (dir / "lab.toml").string());
    spec.launch.cluster.clear();
    spec.launch.hosts = {"x:3"};
    EXPECT_EQ(resolveHosts(spec).hosts, (std::vector<std::string>{"x:3"}));
    ::unsetenv("PARALLAX_CLUSTERS");
    fs::remove_all(dir);
}

TEST(ClusterProfile, HostSlots) {
    EXPECT_EQ(parseHostSlots("node1:8")->slot_count, 8);
    EXPECT_EQ(parseHostSlots("node1.lab:1")->name, "node1.lab");
    for (const char* bad : {"node1", "node1:", ":4", "node1:0", "node1:-1", "a b:1", "-oX:1", "n:1234567", "n:x"})
        EXPECT_FALSE(parseHostSlots(bad)) << bad;
}

} // namespace
} // namespace parallax
