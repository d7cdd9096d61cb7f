// The Cluster page and its models with preflight replaced by fixed results: what each column says,
// that the check runs off the GUI thread, once at a time, and the profiles found in the folders.
// tests/cluster/ClusterPageTest.cpp drives the same page against real test hosts.
#include "BrowseTestSupport.h"

#include "ui/MainWindow.h"
#include "ui/models/ClusterHostsModel.h"
#include "ui/models/ClusterProfileListModel.h"
#include "ui/models/LocalMachineSummary.h"
#include "ui/models/PreflightRunner.h"
#include "ui/pages/ClusterPage.h"

#include <QAbstractItemModelTester>
#include <QListWidget>
#include <QPushButton>
#include <QSemaphore>
#include <QTableView>
#include <QTest>
#include <QThread>

#include <gtest/gtest.h>

#include <atomic>

using namespace parallax;
using namespace parallax::test;

namespace {

using Col = ClusterHostsModel;

QString cell(const QAbstractItemModel& m, int row, int column, int role = Qt::DisplayRole) {
    return m.data(m.index(row, column), role).toString();
}

ClusterHostsModel::HostState stateOf(const ClusterHostsModel& m, int row) {
    return ClusterHostsModel::HostState(m.data(m.index(row, 0), ClusterHostsModel::HostStateRole).toInt());
}

HostCheck ready(const std::string& host, const std::string& build) {
    HostCheck c;
    c.host = host;
    c.reachable = true;
    c.latency_ms = 42;
    c.hostname = host + ".lab";
    c.cores = 64;
    c.slot_count = 8;
    c.worker_build = build;
    c.load = 1.25;
    c.ranks_running = 0;
    c.gpus = {"NVIDIA H200, 143771 MiB", "NVIDIA H200, 143771 MiB"};
    return c;
}

HostCheck unreachable(const std::string& host) {
    HostCheck c;
    c.host = host;
    c.latency_ms = 5000;
    c.slot_count = 8;
    c.problems = {host + ": no answer over ssh within 5 s; check that the host is up and reachable from here (ssh " +
                  host + ")"};
    return c;
}

const QByteArray kLab = "hosts = [\"node1:8\", \"node2:8\"]\n[ssh]\nuser = \"alice\"\nport = 2222\n";

} // namespace

TEST(ClusterHostsModel, SaysWhatPreflightFoundOnEachHost) {
    ClusterHostsModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
    model.setHosts({"node1:8", "node2:8", "node3:4"});
    ASSERT_EQ(model.rowCount(), 3);
    ASSERT_EQ(model.columnCount(), int(Col::ColumnCount));
    EXPECT_EQ(cell(model, 2, Col::HostColumn), QStringLiteral("node3"));
    EXPECT_EQ(cell(model, 2, Col::SlotsColumn), QStringLiteral("4"));
    EXPECT_EQ(cell(model, 0, Col::StateColumn), QStringLiteral("not checked"));
    EXPECT_EQ(cell(model, 0, Col::CoresColumn), QString());

    model.setChecking(true);
    for (int r = 0; r < 3; ++r) EXPECT_EQ(cell(model, r, Col::StateColumn), QStringLiteral("checking…"));

    HostCheck other = ready("node3", "bbbbbbbbbbbbbbbbbbbb");
    other.ranks_running = 2;
    other.gpus.clear();
    other.notes = {"node3: 8 slots but 4 cores; ranks will share cores"};
    model.setChecks({ready("node1", "aaaa"), unreachable("node2"), other}, "aaaa");
    EXPECT_FALSE(model.isChecking());
    EXPECT_EQ(cell(model, 0, Col::StateColumn), QStringLiteral("reachable"));
    EXPECT_EQ(cell(model, 0, Col::HostnameColumn), QStringLiteral("node1.lab"));
    EXPECT_EQ(cell(model, 0, Col::LatencyColumn), QStringLiteral("42 ms"));
    EXPECT_EQ(cell(model, 0, Col::CoresColumn), QStringLiteral("64"));
    EXPECT_EQ(cell(model, 0, Col::GpusColumn), QStringLiteral("2 × NVIDIA H200 (140 GiB each)"));
    EXPECT_EQ(cell(model, 0, Col::WorkerColumn), QStringLiteral("same build as here"));
    EXPECT_EQ(cell(model, 0, Col::LoadColumn), QStringLiteral("1.25"));
    EXPECT_EQ(cell(model, 0, Col::RanksColumn), QStringLiteral("0"));
    EXPECT_EQ(cell(model, 0, Col::ProblemsColumn), QStringLiteral("ready"));

    EXPECT_EQ(cell(model, 1, Col::StateColumn), QStringLiteral("not reachable"));
    EXPECT_EQ(stateOf(model, 1), ClusterHostsModel::HostState::NotReachable);
    EXPECT_EQ(cell(model, 1, Col::CoresColumn), QString()) << "nothing is known of a host that did not answer";
    EXPECT_EQ(cell(model, 1, Col::WorkerColumn), QString());
    EXPECT_TRUE(cell(model, 1, Col::ProblemsColumn).startsWith(QStringLiteral("node2: no answer over ssh")));
    EXPECT_TRUE(cell(model, 1, Col::ProblemsColumn, Qt::ToolTipRole).contains(QStringLiteral("(ssh node2)")));

    EXPECT_EQ(cell(model, 2, Col::WorkerColumn), QStringLiteral("another build (sha256 bbbbbbbbbbbb…)"));
    EXPECT_EQ(model.workerState(2), ClusterHostsModel::WorkerState::Other);
    EXPECT_EQ(cell(model, 2, Col::GpusColumn), QStringLiteral("none"));
    EXPECT_EQ(cell(model, 2, Col::RanksColumn), QStringLiteral("2"));
    EXPECT_TRUE(cell(model, 2, Col::ProblemsColumn, Qt::ToolTipRole).contains(QStringLiteral("note: node3: 8 slots")));

    // A worker missing there, and none here to compare with.
    HostCheck missing = ready("node1", "");
    model.setChecks({missing, ready("node2", "cccc")}, "");
    ASSERT_EQ(model.rowCount(), 2);
    EXPECT_EQ(cell(model, 0, Col::WorkerColumn), QStringLiteral("missing"));
    EXPECT_EQ(model.workerState(1), ClusterHostsModel::WorkerState::NothingHere);

    // What the last check found is not shown as current while a new one runs.
    model.setChecking(true);
    EXPECT_EQ(cell(model, 1, Col::CoresColumn), QString());
    EXPECT_EQ(cell(model, 1, Col::ProblemsColumn), QString());
    model.clear();
    EXPECT_EQ(model.rowCount(), 0);
}

TEST(ClusterHostsModel, SummarizesMixedGpus) {
    EXPECT_EQ(ClusterHostsModel::gpuSummary({"NVIDIA A100-SXM4-80GB, 81920 MiB", "NVIDIA H200, 143771 MiB"}),
              QStringLiteral("1 × NVIDIA A100-SXM4-80GB (80 GiB); 1 × NVIDIA H200 (140 GiB)"));
    EXPECT_EQ(ClusterHostsModel::gpuSummary({"Some GPU"}), QStringLiteral("1 × Some GPU"));
}

TEST(ClusterProfileListModel, ListsEveryProfileWithItsFolderAndTheErrorOfABrokenOne) {
    ProfileFolders folders;
    const QString lab = ProfileFolders::write(folders.first, QStringLiteral("lab"), kLab);
    const QString broken = ProfileFolders::write(folders.first, QStringLiteral("broken"), "hosts = 3\n");
    const QString shadowed = ProfileFolders::write(folders.second, QStringLiteral("lab"), "hosts = [\"other:1\"]\n");
    ClusterProfileListModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
    model.reload();
    ASSERT_EQ(model.rowCount(), 3);
    EXPECT_EQ(model.folders().value(0), folders.first);
    const int labRow = model.rowOf(lab);
    const int brokenRow = model.rowOf(broken);
    const int shadowedRow = model.rowOf(shadowed);
    ASSERT_GE(labRow, 0);
    ASSERT_GE(brokenRow, 0);
    ASSERT_GE(shadowedRow, 0);
    EXPECT_EQ(cell(model, labRow, ClusterProfileListModel::HostsColumn), QStringLiteral("2 hosts"));
    EXPECT_EQ(cell(model, labRow, ClusterProfileListModel::FolderColumn), folders.first);
    EXPECT_EQ(cell(model, labRow, 0, ClusterProfileListModel::ReferenceRole), QStringLiteral("lab"));
    EXPECT_EQ(cell(model, brokenRow, ClusterProfileListModel::HostsColumn), QStringLiteral("cannot be read"));
    EXPECT_TRUE(cell(model, brokenRow, 0, ClusterProfileListModel::ErrorRole).contains(QStringLiteral("hosts")))
        << cell(model, brokenRow, 0, ClusterProfileListModel::ErrorRole).toStdString();
    // The second folder's lab.toml is what launch.cluster = "lab" does not find: it is named by path.
    EXPECT_EQ(cell(model, shadowedRow, ClusterProfileListModel::FolderColumn), folders.second);
    EXPECT_EQ(cell(model, shadowedRow, 0, ClusterProfileListModel::ReferenceRole), shadowed);
}

namespace {

// Preflight replaced by fixed results, held until released: the page must stay responsive and
// show that it is checking meanwhile.
struct HeldCheck {
    QSemaphore gate;
    std::atomic<int> calls{0};
    std::atomic<bool> done{false};
    std::atomic<QThread*> thread{nullptr};
    std::vector<HostCheck> results;
    PreflightOptions seen;

    PreflightRunner::Check check() {
        return [this](const ClusterProfile&, const PreflightOptions& o) {
            ++calls;
            thread = QThread::currentThread();
            seen = o;
            gate.acquire();
            done = true;
            return results;
        };
    }
    ~HeldCheck() {
        // The check's thread must not outlive what it reads.
        gate.release(100);
        if (calls > 0 && !QTest::qWaitFor([this] { return done.load(); }, 10000)) ADD_FAILURE() << "the check did not end";
    }
};

} // namespace

TEST(ClusterPage, ChecksOffTheGuiThreadOnceAtATimeAndFillsTheTable) {
    ProfileFolders folders;
    const QString lab = ProfileFolders::write(folders.first, QStringLiteral("lab"), kLab);
    QTemporaryDir work;
    // A stand-in worker: its build is the SHA-256 of its bytes.
    const QString worker = work.filePath(QStringLiteral("parallax-worker"));
    {
        QFile f(worker);
        ASSERT_TRUE(f.open(QIODevice::WriteOnly));
        f.write("#!/bin/sh\necho worker\n");
    }
    const std::string build = workerBuild(worker.toStdString());
    ASSERT_EQ(build.size(), 64u);

    HeldCheck held;
    held.results = {ready("node1", build), unreachable("node2")};
    ClusterPage page;
    page.runner()->setCheck(held.check());
    page.setLocalWorker(worker);
    page.setStorePath(work.filePath(QStringLiteral("parallax.db")));
    page.resize(1200, 700);
    page.show();
    ASSERT_TRUE(page.selectProfile(lab));
    ClusterHostsModel& hosts = *page.hostsModel();
    ASSERT_EQ(hosts.rowCount(), 2);
    EXPECT_EQ(stateOf(hosts, 0), ClusterHostsModel::HostState::NotChecked);
    EXPECT_TRUE(page.testButton()->isEnabled());
    EXPECT_EQ(page.statusText(), QStringLiteral("Not checked yet."));

    QTest::mouseClick(page.testButton(), Qt::LeftButton);
    EXPECT_TRUE(page.isChecking());
    EXPECT_EQ(stateOf(hosts, 0), ClusterHostsModel::HostState::Checking);
    EXPECT_EQ(cell(hosts, 1, Col::StateColumn), QStringLiteral("checking…"));
    EXPECT_TRUE(page.statusText().startsWith(QStringLiteral("Checking 2 hosts over ssh"))) << page.statusText().toStdString();
    EXPECT_FALSE(page.testButton()->isEnabled());
    // The GUI thread goes on while the check waits; a second request starts nothing.
    ASSERT_TRUE(waitFor([&] { return held.calls == 1; }, 5000));
    page.testConnection();
    QTest::qWait(100);
    EXPECT_EQ(held.calls, 1);
    EXPECT_NE(held.thread.load(), QThread::currentThread());
    EXPECT_EQ(held.seen.local_worker, worker.toStdString());
    EXPECT_EQ(held.seen.local_build, build) << "the build here is computed once, before the hosts are asked";
    EXPECT_EQ(held.seen.shared_folder, work.filePath(QStringLiteral("parallax.db.runs")).toStdString());
    EXPECT_TRUE(QFileInfo(work.filePath(QStringLiteral("parallax.db.runs"))).isDir());

    held.gate.release();
    ASSERT_TRUE(waitFor([&] { return !page.isChecking(); }, 5000));
    EXPECT_EQ(held.calls, 1);
    EXPECT_EQ(cell(hosts, 0, Col::StateColumn), QStringLiteral("reachable"));
    EXPECT_EQ(cell(hosts, 0, Col::WorkerColumn), QStringLiteral("same build as here"));
    EXPECT_EQ(cell(hosts, 0, Col::GpusColumn), QStringLiteral("2 × NVIDIA H200 (140 GiB each)"));
    EXPECT_EQ(cell(hosts, 1, Col::StateColumn), QStringLiteral("not reachable"));
    EXPECT_TRUE(page.statusText().contains(QStringLiteral("1 of 2 not reachable"))) << page.statusText().toStdString();
    EXPECT_TRUE(page.problemsText().contains(QStringLiteral("problem: node2: no answer over ssh within 5 s")))
        << page.problemsText().toStdString();
    EXPECT_TRUE(page.testButton()->isEnabled());

    // The result stays with its profile: reloading the folders shows it again.
    page.reloadProfiles();
    EXPECT_EQ(page.currentProfilePath(), lab);
    EXPECT_EQ(cell(*page.hostsModel(), 1, Col::StateColumn), QStringLiteral("not reachable"));
}

TEST(ClusterPage, ShowsWhyAProfileCannotBeReadAndWritesNewOnesFromTheExample) {
    ProfileFolders folders;
    const QString broken = ProfileFolders::write(folders.first, QStringLiteral("broken"), "hosts = [\"node1\"]\n");
    ClusterPage page;
    ASSERT_EQ(page.profilesModel()->rowCount(), 2) << "this machine, then the profile";
    ASSERT_TRUE(page.selectProfile(broken));
    EXPECT_FALSE(page.testButton()->isEnabled());
    EXPECT_EQ(page.hostsModel()->rowCount(), 0);
    EXPECT_TRUE(page.problemsText().contains(QStringLiteral("node1"))) << page.problemsText().toStdString();

    QString error;
    const QString path = page.createProfile(QStringLiteral("gpu-lab"), &error);
    ASSERT_FALSE(path.isEmpty()) << error.toStdString();
    EXPECT_EQ(path, QDir(folders.first).filePath(QStringLiteral("gpu-lab.toml")));
    QFile written(path);
    ASSERT_TRUE(written.open(QIODevice::ReadOnly));
    const QString source = qEnvironmentVariable("PARALLAX_SOURCE_DIR");
    ASSERT_FALSE(source.isEmpty()) << "PARALLAX_SOURCE_DIR names the source tree (ctest sets it)";
    QFile example(source + QStringLiteral("/resources/clusters/example.toml"));
    ASSERT_TRUE(example.open(QIODevice::ReadOnly)) << example.fileName().toStdString();
    EXPECT_EQ(written.readAll(), example.readAll());
    EXPECT_EQ(page.currentProfilePath(), path);
    EXPECT_EQ(page.hostsModel()->rowCount(), 2) << "the example's node1 and node2";
    EXPECT_TRUE(page.testButton()->isEnabled());

    EXPECT_TRUE(page.createProfile(QStringLiteral("gpu-lab"), &error).isEmpty());
    EXPECT_TRUE(error.contains(QStringLiteral("exists already"))) << error.toStdString();
    EXPECT_TRUE(page.createProfile(QStringLiteral("../escape"), &error).isEmpty());
    EXPECT_FALSE(QFileInfo::exists(QDir(folders.dir.path()).filePath(QStringLiteral("escape.toml"))));
}

TEST(ClusterPage, IsAPageOfTheWindow) {
    ProfileFolders folders;
    CraftedStore store;
    MainWindow window(store.qpath());
    ASSERT_NE(window.clusterPage(), nullptr);
    EXPECT_EQ(window.page(MainWindow::Cluster), window.clusterPage());
    auto* nav = window.findChild<QListWidget*>(QStringLiteral("navigation"));
    ASSERT_NE(nav, nullptr);
    EXPECT_EQ(nav->item(int(MainWindow::Cluster))->text(), QStringLiteral("Cluster"));
    EXPECT_FALSE(nav->item(int(MainWindow::Cluster))->icon().isNull());
    window.showPage(MainWindow::Cluster);
    EXPECT_EQ(window.currentPage(), MainWindow::Cluster);
}

namespace {

QString gibText(int64_t bytes) {
    return QStringLiteral("%1 GiB").arg(double(bytes) / (1024.0 * 1024.0 * 1024.0), 0, 'f', 1);
}

// Sets PARALLAX_WORKER for the page's lifetime, as a person starting the console would.
struct WorkerVariable {
    QByteArray saved = qgetenv("PARALLAX_WORKER");
    bool had = qEnvironmentVariableIsSet("PARALLAX_WORKER");
    explicit WorkerVariable(const QString& path) { qputenv("PARALLAX_WORKER", path.toLocal8Bit()); }
    ~WorkerVariable() {
        if (had) qputenv("PARALLAX_WORKER", saved);
        else qunsetenv("PARALLAX_WORKER");
    }
};

} // namespace

TEST(LocalMachine, SaysWhatALocalRunFindsHere) {
    LocalMachine m;
    m.hostName = QStringLiteral("desk");
    m.machine.cores = 16;
    m.machine.ram_bytes = int64_t(64) * 1024 * 1024 * 1024;
    m.worker = QStringLiteral("/opt/parallax/bin/parallax-worker");
    m.workerExists = true;
    m.mpirun = QStringLiteral("/usr/bin/mpirun");
    const QString computing = m.details();
    EXPECT_TRUE(computing.contains(QStringLiteral("Host name: desk"))) << computing.toStdString();
    EXPECT_TRUE(computing.contains(QStringLiteral("Cores: 16 · Memory: 64.0 GiB"))) << computing.toStdString();
    EXPECT_TRUE(computing.contains(QStringLiteral("GPUs: none reported (CPU only here)"))) << computing.toStdString();
    EXPECT_TRUE(computing.contains(QStringLiteral("Worker: /opt/parallax/bin/parallax-worker (computing its build…)")))
        << computing.toStdString();
    EXPECT_TRUE(computing.contains(QStringLiteral("MPI launcher: /usr/bin/mpirun"))) << computing.toStdString();
    EXPECT_TRUE(computing.contains(QStringLiteral("launch.target = \"local\" runs /usr/bin/mpirun -np N")))
        << computing.toStdString();
    EXPECT_TRUE(m.problems().isEmpty());

    m.buildKnown = true;
    m.workerBuild = QStringLiteral("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
    EXPECT_TRUE(m.details().contains(QStringLiteral("(build sha256 0123456789ab…)"))) << m.details().toStdString();
    EXPECT_EQ(m.status(), QStringLiteral("A local run can start here."));
    m.machine.gpu_memory_bytes = int64_t(80) * 1024 * 1024 * 1024;
    EXPECT_TRUE(m.details().contains(QStringLiteral("GPUs: 80.0 GiB of memory each"))) << m.details().toStdString();

    m.workerExists = false;
    m.mpirun.clear();
    EXPECT_TRUE(m.details().contains(QStringLiteral("(missing: there is no file there)"))) << m.details().toStdString();
    EXPECT_TRUE(m.details().contains(QStringLiteral("MPI launcher: mpirun is not on PATH")));
    ASSERT_EQ(m.problems().size(), 2);
    EXPECT_TRUE(m.problems()[0].startsWith(QStringLiteral("there is no parallax-worker at /opt/parallax/bin/parallax-worker")));
}

TEST(ClusterPage, ListsThisMachineFirstWithItsCoresMemoryAndWorkerBuild) {
    ProfileFolders folders;
    ProfileFolders::write(folders.first, QStringLiteral("lab"), kLab);
    QTemporaryDir work;
    const QString worker = work.filePath(QStringLiteral("parallax-worker"));
    {
        QFile f(worker);
        ASSERT_TRUE(f.open(QIODevice::WriteOnly));
        f.write("#!/bin/sh\necho worker\n");
    }
    const QString build = QString::fromStdString(workerBuild(worker.toStdString()));
    ASSERT_EQ(build.size(), 64);
    WorkerVariable variable(worker);
    ClusterPage page;
    ClusterProfileListModel& profiles = *page.profilesModel();
    ASSERT_EQ(profiles.rowCount(), 2);
    EXPECT_EQ(cell(profiles, 0, ClusterProfileListModel::NameColumn), QStringLiteral("This machine"));
    EXPECT_EQ(cell(profiles, 0, ClusterProfileListModel::HostsColumn), QStringLiteral("launch.target = \"local\""));
    EXPECT_EQ(cell(profiles, 1, ClusterProfileListModel::NameColumn), QStringLiteral("lab"));
    EXPECT_EQ(page.currentProfilePath(), ClusterProfileListModel::thisMachinePath()) << "selected when the page opens";
    EXPECT_EQ(page.localWorker(), worker);

    const MachineInfo here = thisMachine();
    ASSERT_GT(here.cores, 0);
    ASSERT_GT(here.ram_bytes, 0);
    EXPECT_TRUE(page.detailsText().contains(QStringLiteral("Cores: %1 · Memory: %2").arg(here.cores).arg(gibText(here.ram_bytes))))
        << page.detailsText().toStdString();
    EXPECT_TRUE(page.detailsText().contains(QStringLiteral("Worker: %1").arg(worker))) << page.detailsText().toStdString();
    EXPECT_FALSE(page.testButton()->isEnabled()) << "nothing to test over ssh here";
    EXPECT_EQ(page.hostsModel()->rowCount(), 0);
    // Nothing is hashed before the page is looked at; then the build arrives from its own thread
    // and is shown in place.
    EXPECT_FALSE(page.localMachine()->isHashing());
    EXPECT_FALSE(page.detailsText().contains(build.left(12)));
    page.show();
    ASSERT_TRUE(waitFor([&] { return page.detailsText().contains(build.left(12)); }, 10000)) << page.detailsText().toStdString();
    EXPECT_TRUE(page.detailsText().contains(QStringLiteral("(build sha256 %1…)").arg(build.left(12))));

    // Another entry and back: the same text, and the build is not computed again for the same file.
    ASSERT_TRUE(page.selectProfile(QDir(folders.first).filePath(QStringLiteral("lab.toml"))));
    EXPECT_TRUE(page.detailsText().startsWith(QStringLiteral("File: "))) << page.detailsText().toStdString();
    page.reloadProfiles();
    EXPECT_FALSE(page.localMachine()->isHashing());
    ASSERT_TRUE(page.selectProfile(ClusterProfileListModel::thisMachinePath()));
    EXPECT_TRUE(page.detailsText().contains(build.left(12))) << page.detailsText().toStdString();
}

TEST(ClusterPage, SaysWhenTheWorkerItWouldLaunchIsMissing) {
    ProfileFolders folders;
    QTemporaryDir work;
    const QString missing = work.filePath(QStringLiteral("no-such-worker"));
    WorkerVariable variable(missing);
    ClusterPage page;
    ASSERT_EQ(page.profilesModel()->rowCount(), 1);
    ASSERT_EQ(page.currentProfilePath(), ClusterProfileListModel::thisMachinePath());
    EXPECT_TRUE(page.detailsText().contains(QStringLiteral("Worker: %1 (missing: there is no file there)").arg(missing)))
        << page.detailsText().toStdString();
    EXPECT_TRUE(page.problemsText().contains(QStringLiteral("problem: there is no parallax-worker at %1").arg(missing)))
        << page.problemsText().toStdString();
    EXPECT_TRUE(page.statusText().startsWith(QStringLiteral("A local run cannot start here yet")))
        << page.statusText().toStdString();
    EXPECT_FALSE(page.localMachine()->isHashing()) << "nothing to hash";
}
