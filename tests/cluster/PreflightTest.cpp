// Preflight against real test hosts: what it reports for each host (what the Cluster page shows),
// and the problems it names.

#include "core/launch/Preflight.h"
#include "tests/cluster/ClusterSupport.h"
#include "tests/support/Process.h"
#include "tests/support/TestHosts.h"

#include <gtest/gtest.h>

#include <unistd.h>

using namespace parallax;
using namespace parallax::testing;

namespace {

TEST(Preflight, ReportsEachHostAndNamesWhatIsWrong) {
    if (const std::string why = TestHosts::available(); !why.empty()) GTEST_SKIP() << why;
    TempDir tmp;
    TestHosts hosts(2);
    const ClusterProfile cluster = parseClusterProfile(clusterProfile(hosts, 3), tmp.path() + "/hosts.toml");
    PreflightOptions o;
    o.local_worker = buildDir() + "/app/parallax-worker";
    o.shared_folder = tmp.path();
    o.processes = 6;
    std::vector<HostCheck> checks = preflight(cluster, o);
    ASSERT_EQ(checks.size(), 2u);
    for (int i = 0; i < 2; ++i) {
        const HostCheck& c = checks[static_cast<size_t>(i)];
        EXPECT_TRUE(c.reachable) << c.host;
        EXPECT_TRUE(c.problems.empty()) << c.problems.front();
        EXPECT_EQ(c.host, hosts.name(i));
        EXPECT_EQ(c.hostname, hosts.name(i)) << "the host names itself";
        EXPECT_GT(c.cores, 0);
        EXPECT_EQ(c.slot_count, 3);
        EXPECT_EQ(c.worker_build, workerBuild(o.local_worker));
        EXPECT_EQ(c.worker_build.size(), 64u);
        EXPECT_EQ(c.ranks_running, 0);
        EXPECT_GE(c.load, 0);
        EXPECT_GT(c.latency_ms, 0);
    }
    EXPECT_EQ(access((tmp.path() + "/.parallax-preflight-x").c_str(), F_OK), -1);

    // More processes than slots; a folder the hosts cannot see (removed before they look).
    o.processes = 7;
    checks = preflight(cluster, o);
    const std::vector<std::string> problems = preflightProblems(checks);
    ASSERT_EQ(problems.size(), 1u);
    EXPECT_NE(problems[0].find("the hosts offer 6 slots but the run needs 7 processes"), std::string::npos)
        << problems[0];

    o.processes = 6;
    o.shared_folder = tmp.path() + "/not-there";
    checks = preflight(cluster, o);
    EXPECT_NE(preflightProblems(checks).at(0).find("cannot write a test file in " + o.shared_folder), std::string::npos)
        << preflightProblems(checks).at(0);
}

} // namespace
