// parallax-screenshots: renders each page of the console (New run, Live, Logs, Pipeline, Runs, Compare,
// Cluster) to a PNG file for a person to look at, with the data of real runs. When the store has no runs
// it first trains two tiny ones with parallax-cli: the quick start with fewer steps, and a variant of
// it (a higher learning rate with ZeRO-1) so that the Compare page has differences to show. The
// Cluster page shows the example profile after a real Test connection (its hosts are placeholders,
// so preflight says why it cannot reach them).
#include "core/spec/SpecIO.h"
#include "core/store/RunStore.h"
#include "ui/MainWindow.h"
#include "ui/models/LogTableModel.h"
#include "ui/models/RunListModel.h"
#include "ui/models/SpecFormModel.h"
#include "ui/models/StoreWatcher.h"
#include "ui/pages/ClusterPage.h"
#include "ui/pages/ComparePage.h"
#include "ui/pages/LivePage.h"
#include <QTabWidget>
#include "ui/pages/SamplesPanel.h"
#include "ui/pages/LogsPage.h"
#include "ui/pages/NewRunPage.h"
#include "ui/pages/PipelinePage.h"
#include "ui/pages/RunsPage.h"

#include <QAbstractItemModel>
#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QSettings>
#include <QTemporaryDir>
#include <QTest>

#include <cstdio>
#include <stdexcept>

using namespace parallax;

namespace {

[[noreturn]] void fail(const QString& message) {
    std::fprintf(stderr, "parallax-screenshots: %s\n", qPrintable(message));
    std::exit(1);
}

template <typename Pred>
void waitFor(Pred pred, int timeoutMs, const QString& what) {
    if (!QTest::qWaitFor(pred, timeoutMs)) fail(QStringLiteral("timed out waiting for %1").arg(what));
}

// Trains one run of `spec` to the end with parallax-cli in the foreground.
void train(const QString& cli, const QString& store, const RunSpec& spec, const QDir& scratch) {
    const QString path = scratch.filePath(QString::fromStdString(spec.name) + QStringLiteral(".toml"));
    writeSpecFile(spec, path.toStdString());
    QProcess process;
    process.setProcessChannelMode(QProcess::ForwardedChannels);
    const QStringList args = {QStringLiteral("--store"), store, QStringLiteral("run"), path};
    std::fprintf(stderr, "parallax-screenshots: %s %s\n", qPrintable(cli), qPrintable(args.join(QChar(' '))));
    process.start(cli, args);
    if (!process.waitForStarted()) fail(QStringLiteral("%1 could not be started: %2").arg(cli, process.errorString()));
    if (!process.waitForFinished(15 * 60 * 1000) || process.exitStatus() != QProcess::NormalExit ||
        process.exitCode() != 0)
        fail(QStringLiteral("%1 run %2 failed (exit code %3); its output is above").arg(cli, path).arg(process.exitCode()));
}

// Saves `page` as <out>/<name>-<width>x<height>.png.
void save(MainWindow& window, MainWindow::Page page, const QDir& out, const QString& name) {
    window.showPage(page);
    // Let layouts settle and the plots redraw (they coalesce redraws over 40 ms).
    QTest::qWait(600);
    const QString path =
        out.filePath(QStringLiteral("%1-%2x%3.png").arg(name).arg(window.width()).arg(window.height()));
    if (!window.grab().save(path)) fail(QStringLiteral("could not write %1").arg(path));
    std::printf("%s\n", qPrintable(path));
}

} // namespace

int main(int argc, char** argv) {
    QApplication app(argc, argv);
    QApplication::setApplicationName(QStringLiteral("parallax-screenshots"));
    QApplication::setOrganizationName(QStringLiteral("Parallax"));

    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral("Renders each page of the Parallax console to a PNG file"));
    parser.addHelpOption();
    const QCommandLineOption storeOption(QStringLiteral("store"), QStringLiteral("The run store"), QStringLiteral("PATH"));
    const QCommandLineOption outOption(QStringLiteral("out"), QStringLiteral("Folder for the PNG files"), QStringLiteral("DIR"));
    const QCommandLineOption cliOption(QStringLiteral("cli"), QStringLiteral("parallax-cli, to train runs when the store has none"),
                                       QStringLiteral("PATH"));
    const QCommandLineOption specOption(QStringLiteral("spec"), QStringLiteral("The quick-start spec"), QStringLiteral("FILE"));
    const QCommandLineOption stepsOption(QStringLiteral("steps"), QStringLiteral("Steps of the runs trained here (default 30)"),
                                         QStringLiteral("N"), QStringLiteral("30"));
    const QCommandLineOption clusterOption(QStringLiteral("cluster-profile"),
                                           QStringLiteral("A cluster profile for the Cluster page (the example)"),
                                           QStringLiteral("FILE"));
    parser.addOptions({storeOption, outOption, cliOption, specOption, stepsOption, clusterOption});
    parser.process(app);
    for (const QCommandLineOption* required : {&storeOption, &outOption, &specOption})
        if (!parser.isSet(*required)) fail(QStringLiteral("--%1 is required").arg(required->names().first()));

    const QString store = QFileInfo(parser.value(storeOption)).absoluteFilePath();
    const QDir out(parser.value(outOption));
    QDir().mkpath(out.path());
    QDir().mkpath(QFileInfo(store).absolutePath());
    // The window's remembered layout stays out of a person's settings.
    QTemporaryDir settingsDir;
    QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, settingsDir.path());

    RunSpec quickstart;
    try {
        quickstart = readSpecFile(parser.value(specOption).toStdString());
    } catch (const std::exception& e) {
        fail(QString::fromStdString(e.what()));
    }

    bool empty = true;
    try {
        empty = RunStore(store.toStdString()).listRuns().empty();
    } catch (const std::exception& e) {
        fail(QString::fromStdString(e.what()));
    }
    if (empty) {
        const QString cli = parser.value(cliOption);
        if (cli.isEmpty() || !QFileInfo(cli).isExecutable())
            fail(QStringLiteral("the store %1 has no runs and parallax-cli is not available%2; build parallax-cli and "
                                "parallax-worker (cmake --build <build> --target parallax-cli parallax-worker), or pass "
                                "--store with a store that has runs")
                     .arg(store, cli.isEmpty() ? QString() : QStringLiteral(" at ") + cli));
        QTemporaryDir scratch;
        RunSpec tiny = quickstart;
        tiny.name = "quickstart";
        tiny.train.steps = parser.value(stepsOption).toLongLong();
        tiny.train.warmup = std::min<int64_t>(tiny.train.warmup, tiny.train.steps / 3);
        tiny.train.checkpoint_every = 0;
        train(cli, store, tiny, QDir(scratch.path()));
        RunSpec variant = tiny;
        variant.name = "quickstart-lr3e-3-zero1";
        variant.train.lr = 3e-3;
        variant.parallel.zero = 1;
        train(cli, store, variant, QDir(scratch.path()));
    }

    // The Cluster page lists this profile only, not a person's own.
    QTemporaryDir clusterDir;
    QString clusterProfile;
    if (parser.isSet(clusterOption)) {
        const QString source = parser.value(clusterOption);
        clusterProfile = QDir(clusterDir.path()).filePath(QStringLiteral("clusters/") + QFileInfo(source).fileName());
        QDir().mkpath(QFileInfo(clusterProfile).absolutePath());
        if (!QFile::copy(source, clusterProfile)) fail(QStringLiteral("cannot copy %1 to %2").arg(source, clusterProfile));
        qputenv("PARALLAX_CLUSTERS", QFileInfo(clusterProfile).absolutePath().toLocal8Bit());
        qputenv("XDG_CONFIG_HOME", QDir(clusterDir.path()).filePath(QStringLiteral("config")).toLocal8Bit());
    }

    MainWindow window(store);
    window.resize(1280, 720);
    window.show();
    if (!QTest::qWaitForWindowExposed(&window)) fail(QStringLiteral("the window was not shown; is there a display?"));
    waitFor([&] { return window.runsModel()->rowCount() > 0; }, 20000, QStringLiteral("the runs list"));

    // The runs to show: the newest finished one on Live and Logs, the two newest in Compare.
    const RunListModel* runs = window.runsModel();
    qint64 shown = 0;
    QList<qint64> compared;
    for (int row = 0; row < runs->rowCount(); ++row) {
        const RunRecord& r = runs->record(row);
        if (!shown && r.state == RunState::Succeeded) shown = r.id;
        if (compared.size() < 2) compared << r.id;
    }
    if (!shown) shown = runs->record(0).id;

    // The smallest laptop window and a full-HD one: nothing may be cut off in either.
    for (const QSize size : {QSize(1280, 720), QSize(1920, 1080)}) {
        window.resize(size);
        QTest::qWait(200);
        window.newRunPage()->setSpec(quickstart, parser.value(specOption));
        save(window, MainWindow::NewRun, out, QStringLiteral("01-new-run"));
        // The same form with a layout that cannot work: the validator's messages beside the fields.
        RunSpec invalid = quickstart;
        invalid.parallel.tp = 3;
        invalid.launch.processes = 4;
        window.newRunPage()->setSpec(invalid);
        window.newRunPage()->formModel()->validateNow();
        save(window, MainWindow::NewRun, out, QStringLiteral("01b-new-run-invalid"));
        window.newRunPage()->setSpec(quickstart, parser.value(specOption));

        window.openRun(shown);
        waitFor([&] { return window.livePage()->snapshot().lastStep().has_value(); }, 20000, QStringLiteral("the run's metrics"));
        save(window, MainWindow::Live, out, QStringLiteral("02-live"));
        // A run that drew images: the Live page's Samples tab too.
        if (!RunStore(store.toStdString()).events<SampleEvent>(shown).empty()) {
            LivePage* live = window.livePage();
            waitFor([&] { return !live->samplesPanel()->images().isEmpty(); }, 20000, QStringLiteral("the run's samples"));
            live->bottomTabs()->setCurrentWidget(live->samplesPanel());
            save(window, MainWindow::Live, out, QStringLiteral("02c-live-samples"));
            live->bottomTabs()->setCurrentIndex(0);
        }

        waitFor([&] { return window.logsPage()->model()->rowCount() > 0; }, 20000, QStringLiteral("the run's logs"));
        save(window, MainWindow::Logs, out, QStringLiteral("03-logs"));

        // The page reads the run's spans once it is shown.
        window.showPage(MainWindow::Pipeline);
        waitFor([&] { return !window.pipelinePage()->isLoading(); }, 20000, QStringLiteral("the run's pipeline spans"));
        save(window, MainWindow::Pipeline, out, QStringLiteral("03b-pipeline"));

        window.runsPage()->selectRun(shown);
        save(window, MainWindow::Runs, out, QStringLiteral("04-runs"));

        window.comparePage()->setCheckedRuns(compared);
        waitFor([&] { return int(window.comparePage()->loadedRuns().size()) == compared.size(); }, 20000,
                QStringLiteral("the runs to compare"));
        save(window, MainWindow::Compare, out, QStringLiteral("05-compare"));

        if (!clusterProfile.isEmpty()) {
            ClusterPage* cluster = window.clusterPage();
            if (parser.isSet(cliOption))
                cluster->setLocalWorker(QFileInfo(parser.value(cliOption)).dir().filePath(QStringLiteral("parallax-worker")));
            window.showPage(MainWindow::Cluster);
            if (!cluster->selectProfile(clusterProfile)) fail(QStringLiteral("the Cluster page does not list %1").arg(clusterProfile));
            cluster->testConnection();
            waitFor([&] { return !cluster->isChecking(); }, 60000, QStringLiteral("the cluster profile's check"));
            save(window, MainWindow::Cluster, out, QStringLiteral("06-cluster"));
        }
    }
    return 0;
}
