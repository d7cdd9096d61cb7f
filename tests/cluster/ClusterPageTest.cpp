// The console's Cluster page against real test hosts: Test connection runs preflight over ssh and
// the table shows what each host said about itself; a host whose sshd is stopped is shown not
// reachable, with a problem that names it.

#include "tests/cluster/ClusterSupport.h"
#include "tests/support/Process.h"
#include "tests/support/TestHosts.h"
#include "tests/support/TestSlurm.h"
#include "ui/models/SlurmPartitionsModel.h"
#include "ui/models/ClusterHostsModel.h"
#include "ui/pages/ClusterPage.h"
#include "ui/MainWindow.h"
#include "core/store/RunStore.h"

#include <QApplication>
#include <QLabel>
#include <QTableView>
#include <QDir>
#include <QPushButton>
#include <QTest>

#include <gtest/gtest.h>

#include <csignal>
#include <fstream>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

using namespace parallax;
using namespace parallax::testing;

namespace {

using Col = ClusterHostsModel;

QString cell(const ClusterHostsModel& m, int row, int column) {
    return m.data(m.index(row, column)).toString();
}

// $PARALLAX_CLUSTERS and $XDG_CONFIG_HOME for the test's own folders, restored at the end.
class ProfileEnvironment {
public:
    ProfileEnvironment(const std::string& clusters, const std::string& config) {
        for (const auto& [name, value] : {std::pair{"PARALLAX_CLUSTERS", clusters}, std::pair{"XDG_CONFIG_HOME", config}}) {
            m_saved.emplace_back(name, qEnvironmentVariableIsSet(name), qgetenv(name));
            qputenv(name, QByteArray::fromStdString(value));
        }
    }
    ~ProfileEnvironment() {
        for (const auto& [name, had, value] : m_saved) {
            if (had) qputenv(name, value);
            else qunsetenv(name);
        }
    }

private:
    std::vector<std::tuple<const char*, bool, QByteArray>> m_saved;
};

// Clicks Test connection and waits for the check to end.
::testing::AssertionResult testConnection(ClusterPage& page) {
    if (!page.testButton()->isEnabled()) return ::testing::AssertionFailure() << "Test connection is disabled";
    QTest::mouseClick(page.testButton(), Qt::LeftButton);
    if (!page.isChecking()) return ::testing::AssertionFailure() << "the click started no check";
    if (cell(*page.hostsModel(), 0, Col::StateColumn) != QStringLiteral("checking…"))
        return ::testing::AssertionFailure() << "the table does not say it is checking";
    // Preflight gives each host 5 s to answer and as long again for the check.
    if (!QTest::qWaitFor([&] { return !page.isChecking(); }, 60000))
        return ::testing::AssertionFailure() << "the check did not end within 60 s";
    return ::testing::AssertionSuccess();
}

TEST(ClusterPage, TestConnectionShowsWhatEachTestHostSays) {
    if (const std::string why = TestHosts::available(); !why.empty()) GTEST_SKIP() << why;
    TempDir tmp;
    TestHosts hosts(2);
    const std::string folder = tmp.path() + "/clusters";
    QDir().mkpath(QString::fromStdString(folder));
    const std::string profile = folder + "/testhosts.toml";
    std::ofstream(profile) << clusterProfile(hosts, 2);
    ProfileEnvironment environment(folder, tmp.path() + "/config");

    ClusterPage page;
    page.setLocalWorker(QString::fromStdString(buildDir() + "/app/parallax-worker"));
    page.setStorePath(QString::fromStdString(tmp.path() + "/parallax.db"));
    page.resize(1400, 700);
    page.show();
    ASSERT_TRUE(page.selectProfile(QString::fromStdString(profile)));
    const ClusterHostsModel& model = *page.hostsModel();
    ASSERT_EQ(model.rowCount(), 2);

    ASSERT_TRUE(testConnection(page));
    for (int i = 0; i < 2; ++i) {
        const QString name = QString::fromStdString(hosts.name(i));
        EXPECT_EQ(cell(model, i, Col::HostColumn), name);
        EXPECT_EQ(cell(model, i, Col::StateColumn), QStringLiteral("reachable")) << page.problemsText().toStdString();
        EXPECT_EQ(cell(model, i, Col::HostnameColumn), name) << "the host names itself";
        EXPECT_GT(cell(model, i, Col::CoresColumn).toInt(), 0);
        EXPECT_EQ(cell(model, i, Col::WorkerColumn), QStringLiteral("same build as here"));
        EXPECT_EQ(cell(model, i, Col::ProblemsColumn), QStringLiteral("ready")) << page.problemsText().toStdString();
        EXPECT_EQ(cell(model, i, Col::RanksColumn), QStringLiteral("0"));
        EXPECT_TRUE(cell(model, i, Col::LatencyColumn).endsWith(QStringLiteral(" ms")));
    }
    EXPECT_TRUE(page.statusText().contains(QStringLiteral("all 2 hosts are ready"))) << page.statusText().toStdString();

    // The second host's sshd stops: it cannot be reached, and the problem says which host.
    hosts.stopSshd(1);
    ASSERT_TRUE(testConnection(page));
    const QString second = QString::fromStdString(hosts.name(1));
    EXPECT_EQ(cell(model, 0, Col::StateColumn), QStringLiteral("reachable"));
    EXPECT_EQ(cell(model, 1, Col::StateColumn), QStringLiteral("not reachable"));
    EXPECT_TRUE(cell(model, 1, Col::ProblemsColumn).startsWith(second + QStringLiteral(": ")))
        << cell(model, 1, Col::ProblemsColumn).toStdString();
    EXPECT_TRUE(page.problemsText().contains(QStringLiteral("problem: ") + second)) << page.problemsText().toStdString();
    EXPECT_TRUE(page.statusText().contains(QStringLiteral("1 of 2 not reachable"))) << page.statusText().toStdString();
}

// The page lists the partitions of the real test Slurm, with their nodes and CPUs as sinfo says,
// and says why there are none when Slurm does not answer.
TEST(ClusterPageSlurm, ListsThePartitionsWithTheirIdleAndAllocatedNodes) {
    if (const std::string why = TestSlurm::available(); !why.empty()) GTEST_SKIP() << why;
    TempDir tmp;
    ProfileEnvironment env(tmp.path() + "/clusters", tmp.path() + "/config");
    std::optional<TestSlurm> slurm;
    slurm.emplace(1, 4);
    ClusterPage page;
    page.resize(1280, 720);
    page.show();
    SlurmPartitionsModel& m = *page.slurmPartitionsModel();
    ASSERT_TRUE(QTest::qWaitFor([&] { return !m.isLoading() && m.rowCount() > 0; }, 20000))
        << page.slurmStatusLabel()->text().toStdString();
    ASSERT_EQ(m.rowCount(), 2);
    auto text = [&](int row, int col) { return m.data(m.index(row, col)).toString().toStdString(); };
    EXPECT_EQ(text(0, SlurmPartitionsModel::NameColumn), slurm->partition() + " (default)");
    EXPECT_EQ(text(0, SlurmPartitionsModel::AvailabilityColumn), "up");
    EXPECT_EQ(text(0, SlurmPartitionsModel::IdleNodesColumn), "1");
    EXPECT_EQ(text(0, SlurmPartitionsModel::NodesColumn), "1");
    EXPECT_EQ(text(0, SlurmPartitionsModel::CpusColumn), "4");
    EXPECT_EQ(text(1, SlurmPartitionsModel::NameColumn), slurm->smallPartition());
    EXPECT_NE(page.slurmStatusLabel()->text().toStdString().find("2 partition(s)"), std::string::npos);
    EXPECT_TRUE(page.slurmPartitionsView()->isVisible());

    // A job on every CPU: the node is allocated, as Refresh shows.
    const SlurmCommandResult job =
        slurm->run({"sbatch", "--parsable", "-n", "4", "--output=/dev/null", "--wrap", "sleep 600"});
    ASSERT_EQ(job.exitCode, 0) << job.output;
    ASSERT_TRUE(QTest::qWaitFor([&] { return slurm->nodeState(0) == "allocated"; }, 30000));
    page.refreshSlurm();
    ASSERT_TRUE(QTest::qWaitFor([&] { return !m.isLoading(); }, 20000));
    EXPECT_EQ(text(0, SlurmPartitionsModel::IdleNodesColumn), "0");
    EXPECT_EQ(text(0, SlurmPartitionsModel::AllocatedNodesColumn), "1");
    EXPECT_EQ(text(0, SlurmPartitionsModel::IdleCpusColumn), "0");

    // Without Slurm: no rows, and the status says what sinfo said.
    slurm.reset();
    page.refreshSlurm();
    ASSERT_TRUE(QTest::qWaitFor([&] { return !m.isLoading(); }, 30000));
    EXPECT_EQ(m.rowCount(), 0);
    EXPECT_FALSE(page.slurmPartitionsView()->isVisible()) << "no empty table without Slurm";
    EXPECT_NE(page.slurmStatusLabel()->text().toStdString().find("No Slurm here: sinfo"), std::string::npos)
        << page.slurmStatusLabel()->text().toStdString();
}

// A batch job whose supervisor was killed goes on; a console opened on the store has it followed
// again, and the run ends in the store with every step once.
TEST(ConsoleSlurm, FollowsABatchJobNobodyFollows) {
    if (const std::string why = TestSlurm::available(); !why.empty()) GTEST_SKIP() << why;
    TempDir tmp;
    ProfileEnvironment env(tmp.path() + "/clusters", tmp.path() + "/config");
    TestSlurm slurm(1, 4);
    const std::string store = tmp.path() + "/parallax.db";
    const int steps = 300;
    std::ofstream(tmp.path() + "/orphan.toml") << batchSpec("orphan", steps);
    BackgroundProcess run = startProcess({cli(), "--store", store, "run", tmp.path() + "/orphan.toml"},
                                         tmp.path() + "/run.out");
    auto record = [&]() -> std::optional<RunRecord> {
        try {
            return RunStore(store).findRun("orphan");
        } catch (const StoreError&) {
            return std::nullopt;
        }
    };
    auto stored = [&](int64_t id) -> size_t {
        try {
            return RunStore(store).metrics(id).size();
        } catch (const StoreError&) {
            return 0;
        }
    };
    ASSERT_TRUE(QTest::qWaitFor([&] { const auto r = record(); return r && stored(r->id) >= 3; }, 120000))
        << run.output();
    ASSERT_EQ(::kill(run.pid, SIGKILL), 0);
    run.wait();
    const int64_t id = record()->id;
    ASSERT_LT(stored(id), static_cast<size_t>(steps));

    MainWindow window(QString::fromStdString(store));
    window.setCliPath(QString::fromStdString(cli()));
    window.show();
    ASSERT_TRUE(QTest::qWaitFor([&] { const auto r = record(); return r && isTerminal(r->state); }, 240000))
        << "the console did not have the job followed again";
    const RunRecord end = *record();
    EXPECT_EQ(end.state, RunState::Succeeded) << end.exit_reason;
    const auto metrics = RunStore(store).metrics(id);
    ASSERT_EQ(metrics.size(), static_cast<size_t>(steps));
    for (int i = 0; i < steps; ++i) EXPECT_EQ(metrics[size_t(i)].step, i);
    EXPECT_TRUE(QTest::qWaitFor([&] { return slurm.queueEmpty(); }, 30000));
}

} // namespace

// Widgets need a QApplication; without a display they render offscreen.
int main(int argc, char** argv) {
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
