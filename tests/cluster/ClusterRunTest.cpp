// Real runs on test hosts: parallax-cli checks the hosts of a cluster profile over ssh and starts
// mpirun with launch.target = "hosts"; mpirun reaches the hosts over ssh, and the ranks there train
// exactly as one process on this machine does with the same global batch and seed. The store and
// `show` name the hosts the ranks ran on, traffic stays on the hosts' bridge, and nothing of the run
// is left on any host afterwards.

#include "core/store/RunStore.h"
#include "tests/support/Process.h"
#include "tests/support/TestHosts.h"
#include "tests/cluster/ClusterSupport.h"
#include "tests/support/WaitUntil.h"
#include "tests/trainer/support/WorkerRun.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <functional>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

using namespace parallax;
using namespace parallax::testing;

namespace {

class ClusterRun : public ::testing::TestWithParam<Layout> {};

TEST_P(ClusterRun, TrainsLikeOneProcessAndNamesTheHosts) {
    const std::string why = TestHosts::available();
    if (!why.empty())
        GTEST_SKIP() << why;
    const Layout layout = GetParam();
    const int perHost = layout.dp * layout.pp / 2;
    TempDir tmp;

    const CliRun one = runThroughCli(tmp.path(), "one-process", tinySpec("one-process", {}, "target = \"local\"\n"));
    ASSERT_EQ(one.result.exitCode, 0) << one.result.output;
    ASSERT_EQ(one.losses.size(), 6u) << one.result.output;

    TestHosts hosts(2);
    const std::string profile = tmp.path() + "/test-hosts.toml";
    std::ofstream(profile) << clusterProfile(hosts, perHost);
    const std::string launch = "target = \"hosts\"\ncluster = " + tomlString(profile) + "\n";
    // Where each host's processes talk to while the run goes.
    std::mutex peersMutex;
    std::vector<std::set<std::string>> peers(2);
    const CliRun many = runThroughCli(tmp.path(), "on-hosts", tinySpec("on-hosts", layout, launch), [&] {
        for (int i = 0; i < 2; ++i) {
            const std::vector<std::string> now = hosts.tcpPeers(i);
            std::lock_guard<std::mutex> lock(peersMutex);
            peers[static_cast<size_t>(i)].insert(now.begin(), now.end());
        }
    });
    ASSERT_EQ(many.result.exitCode, 0) << many.result.output;
    ASSERT_TRUE(many.record.has_value());
    EXPECT_EQ(many.record->state, RunState::Succeeded) << many.record->exit_reason;
    EXPECT_EQ(many.record->world_size, layout.dp * layout.pp);
    ASSERT_EQ(many.losses.size(), 6u) << many.result.output;
    EXPECT_LT(maxRelativeDifference(one.losses, many.losses), 1e-5);

    // Each rank reports the name of the host it ran on; ranks fill a host's slots before the next
    // host's (mpirun's default by-slot mapping). The run's row keeps each host once.
    std::vector<std::string> perRank;
    for (int i = 0; i < 2; ++i)
        perRank.insert(perRank.end(), static_cast<size_t>(perHost), hosts.name(i));
    EXPECT_EQ(many.runStartHosts, perRank);
    EXPECT_EQ(many.record->hosts, hosts.names());
    EXPECT_NE(many.show.find(hosts.name(0)), std::string::npos) << many.show;
    EXPECT_NE(many.show.find(hosts.name(1)), std::string::npos) << many.show;

    // Traffic stayed on the bridge: the daemons talk to mpirun at the bridge's address (not at
    // another address of this machine), and ranks on one host to those on the other.
    const std::string subnetPrefix = hosts.bridgeAddress().substr(0, hosts.bridgeAddress().rfind('.') + 1);
    for (int i = 0; i < 2; ++i) {
        const std::set<std::string>& seen = peers[static_cast<size_t>(i)];
        for (const std::string& peer : seen)
            EXPECT_TRUE(peer.rfind(subnetPrefix, 0) == 0 || peer.rfind("127.", 0) == 0)
                << hosts.name(i) << " talked to " << peer;
        const std::string other = hosts.address(1 - i) + ":";
        EXPECT_TRUE(std::any_of(seen.begin(), seen.end(), [&](const std::string& p) { return p.rfind(other, 0) == 0; }))
            << hosts.name(i) << " had no connection to " << hosts.name(1 - i);
    }

    for (int i = 0; i < 2; ++i)
        EXPECT_TRUE(waitUntil([&] { return onlySshdLeft(hosts, i); }, std::chrono::seconds(10)))
            << hosts.name(i) << " still runs:\n" << commands(hosts.processes(i));
    EXPECT_TRUE(processesMatching(tmp.path()).empty()) << "no mpirun or worker of the runs is left here";
}

INSTANTIATE_TEST_SUITE_P(Layouts, ClusterRun, ::testing::Values(Layout{2, 1}, Layout{2, 2}),
                         [](const ::testing::TestParamInfo<Layout>& info) {
                             return "dp" + std::to_string(info.param.dp) + "_pp" + std::to_string(info.param.pp);
                         });

} // namespace
