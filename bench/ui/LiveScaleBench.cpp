// The console's Live page while a 1,024-rank run writes its store: the real supervisor in a child
// process with bench_scale_launcher as its mpirun (bench/scale: every rank's steps, device samples
// every 0.5 s, rank steps, comm heartbeats, spans and stdout at the default telemetry rates, one
// rank computing twice as long), and in this process the real console (MainWindow, offscreen) on
// the run's Live page. From the moment the grid holds every host until the supervisor exits:
//   - redraw time: each repaint of the window (an UpdateRequest or a paint not inside one, with
//     every widget it paints), median, p95 and max; and once a second the whole page repainted at
//     once (QWidget::repaint of the Live page, as an expose or a resize asks), median and max;
//   - the longest GUI-thread stall: a 10 ms timer's longest gap, less its 10 ms;
//   - the console process's CPU (its user + system seconds over wall seconds, every thread: the
//     store watchers' included) and its peak RSS (VmHWM);
//   - line to screen: for each repaint after the device grid took newer samples, the time from
//     the newest sample's stamp (the launcher's t, as it wrote the line) to the end of that repaint.
//
//   bench_ui_live [--ranks N] [--seconds S] [--size WxH] [--keep]
//   (defaults: --ranks 1024 --seconds 40 --size 1920x1080)

#include "bench/scale/ScaleLayout.h"
#include "bench/scale/ScaleRun.h"
#include "bench/ui/BenchTable.h"
#include "core/store/RunStore.h"
#include "ui/MainWindow.h"
#include "ui/models/DeviceGridModel.h"
#include "ui/models/LogTableModel.h"
#include "ui/models/PipelineRunModel.h"
#include "ui/models/RunListModel.h"
#include "ui/models/StoreWatcher.h"
#include "ui/pages/LivePage.h"
#include "ui/pages/LogsPage.h"
#include "ui/pages/PipelinePage.h"

#include <QApplication>
#include <QTest>
#include <QThread>
#include <QTimer>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>


using namespace parallax;
using namespace parallax::bench;
using namespace parallax::scale;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

struct Options {
    int ranks = 1024;
    double seconds = 40;
    QSize size{1920, 1080};
    bool keep = false;
};

[[noreturn]] void usage(const std::string& problem) {
    std::cerr << "bench_ui_live: " << problem
              << "\nusage: bench_ui_live [--ranks N] [--seconds S] [--size WxH] [--keep]\n";
    std::exit(2);
}

Options readOptions(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) usage(a + " needs a value");
            return argv[++i];
        };
        if (a == "--ranks") o.ranks = std::atoi(value().c_str());
        else if (a == "--seconds") o.seconds = std::atof(value().c_str());
        else if (a == "--size") {
            const std::string v = value();
            const size_t x = v.find('x');
            if (x == std::string::npos) usage("--size takes WIDTHxHEIGHT, e.g. 1280x720");
            o.size = QSize(std::atoi(v.substr(0, x).c_str()), std::atoi(v.substr(x + 1).c_str()));
        } else if (a == "--keep") o.keep = true;
        else usage("unknown argument " + a);
    }
    if (o.ranks < 8 || o.ranks % kRanksPerHost != 0) usage("--ranks takes a multiple of 8, e.g. 1024");
    if (o.seconds < 15) usage("--seconds must be at least 15");
    if (o.size.width() < 640 || o.size.height() < 480) usage("--size must be at least 640x480");
    return o;
}

double epochNow() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

double msBetween(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
}

// This process as /proc tells it: CPU seconds of every thread, peak and current resident bytes.
struct SelfSample {
    double cpuSeconds = 0;
    double hwmBytes = 0;
    double rssBytes = 0;
};

SelfSample readSelf() {
    SelfSample s;
    std::ifstream stat("/proc/self/stat");
    const std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const size_t close = text.rfind(')');
    if (close != std::string::npos) {
        std::istringstream fields(text.substr(close + 2));
        std::vector<std::string> f;
        for (std::string w; fields >> w;) f.push_back(w);
        if (f.size() >= 13)
            s.cpuSeconds = (std::atof(f[11].c_str()) + std::atof(f[12].c_str())) / static_cast<double>(sysconf(_SC_CLK_TCK));
    }
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);) {
        if (line.rfind("VmHWM:", 0) == 0) s.hwmBytes = std::atof(line.substr(6).c_str()) * 1024.0;
        if (line.rfind("VmRSS:", 0) == 0) s.rssBytes = std::atof(line.substr(6).c_str()) * 1024.0;
    }
    return s;
}

// The application, timing each repaint: the outermost UpdateRequest or Paint event (the window's
// repaint with every widget it paints, and its flush to the backing store).
class TimedApp : public QApplication {
public:
    using QApplication::QApplication;
    std::atomic<bool> recording{false};
    bool forced = false; // a whole-page repaint of the bench's own: timed apart
    std::vector<double> redrawMs;
    // Called before and after each repaint (outermost), while recording.
    std::function<void()> beforeRedraw, afterRedraw;

    // The longest event the GUI thread handled (outermost), and what it was: where a stall comes from.
    double longestEventMs = 0;
    std::string longestEvent;
    // What the watcher or the pages' reads delivered during the event being handled
    // (noteWatcherSignals, notePageReads), if anything.
    std::string signalNote;
    // Set by the bench's own whole-page repaint: the event that ran it is not the console's.
    bool forcedRan = false;

    bool notify(QObject* receiver, QEvent* event) override {
        // The GUI thread's events only: the store watchers' threads deliver theirs here too.
        if (QThread::currentThread() != thread() || !recording || forced || m_depth > 0)
            return QApplication::notify(receiver, event);
        const QEvent::Type type = event->type();
        const bool redraw = type == QEvent::UpdateRequest || type == QEvent::Paint;
        const std::string what = describe(receiver, event); // before: the event may be gone after
        ++m_depth;
        if (redraw && beforeRedraw) beforeRedraw();
        signalNote.clear();
        const Clock::time_point start = Clock::now();
        const bool handled = QApplication::notify(receiver, event);
        const double took = msBetween(start, Clock::now());
        if (redraw) redrawMs.push_back(took);
        if (redraw && afterRedraw) afterRedraw();
        --m_depth;
        const bool own = forcedRan;
        forcedRan = false;
        if (!own && took > longestEventMs) {
            longestEventMs = took;
            // A watcher's event that emitted none of the signals noted answers a read job (read()).
            longestEvent = !signalNote.empty() ? what + ": " + signalNote
                           : what.rfind("parallax::StoreWatcher ", 0) == 0 ? what + ": a read job's answer" : what;
        }
        return handled;
    }

private:
    static std::string describe(QObject* receiver, QEvent* event) {
        std::string what = receiver->metaObject()->className();
        what += " event " + std::to_string(static_cast<int>(event->type()));
        if (event->type() == QEvent::MetaCall) what += " (a queued signal or call)";
        return what;
    }
    int m_depth = 0;
};

pid_t startSupervisor(const std::string& store, const Options& o, const std::string& log) {
    return spawnSelf({"--supervise", store, std::to_string(o.ranks), std::to_string(o.seconds)}, log, "bench_ui_live");
}

// The child: the supervisor of the scale run, as parallax-cli run runs it.
int supervise(int argc, char** argv) {
    if (argc != 5) usage("--supervise STORE RANKS SECONDS");
    RunStore store(argv[2]);
    const RunRecord r = superviseScaleRun(store, std::atoi(argv[3]), std::atof(argv[4]), PARALLAX_SCALE_LAUNCHER, true);
    std::cout << "run " << r.id << " " << runStateName(r.state) << ": " << r.exit_reason << std::endl;
    return 0;
}

// Names what the store watcher delivers in the longest event: its signal, rows and whether a reset.
// Connected after the pages, so each runs once the pages have handled the signal. Not spansAdded:
// a listener to it makes the watcher read spans.
void noteWatcherSignals(TimedApp& app, StoreWatcher* watcher) {
    auto note = [&app](const char* signal, size_t rows, bool reset) {
        app.signalNote += std::string(app.signalNote.empty() ? "" : ", ") + signal + " " + std::to_string(rows) +
                          " rows" + (reset ? " (reset)" : "");
    };
    QObject::connect(watcher, &StoreWatcher::deviceSamplesAdded, &app,
                     [note](qint64, const std::vector<DeviceEvent>& rows, bool reset) { note("deviceSamplesAdded", rows.size(), reset); });
    QObject::connect(watcher, &StoreWatcher::rankStepsAdded, &app,
                     [note](qint64, const std::vector<RankStepEvent>& rows, bool reset) { note("rankStepsAdded", rows.size(), reset); });
    QObject::connect(watcher, &StoreWatcher::metricsAdded, &app,
                     [note](qint64, const std::vector<StepEvent>& rows, bool reset) { note("metricsAdded", rows.size(), reset); });
    QObject::connect(watcher, &StoreWatcher::logsAdded, &app,
                     [note](qint64, const std::vector<LogRow>& rows) { note("logsAdded", rows.size(), false); });
    QObject::connect(watcher, &StoreWatcher::alertsChanged, &app,
                     [note](qint64, const std::vector<RunAlert>& rows) { note("alertsChanged", rows.size(), false); });
    QObject::connect(watcher, &StoreWatcher::runsChanged, &app,
                     [note](const std::vector<RunRecord>& rows) { note("runsChanged", rows.size(), false); });
    QObject::connect(watcher, &StoreWatcher::runChanged, &app, [note](const RunRecord&) { note("runChanged", 1, false); });
    QObject::connect(watcher, &StoreWatcher::hostStatusesChanged, &app,
                     [note](qint64, const std::vector<HostStatus>& rows) { note("hostStatusesChanged", rows.size(), false); });
    QObject::connect(watcher, &StoreWatcher::deviceSamplesLoaded, &app,
                     [note](qint64, double, double, const std::vector<DeviceEvent>& rows) { note("deviceSamplesLoaded", rows.size(), false); });
    QObject::connect(watcher, &StoreWatcher::rankStepsLoaded, &app,
                     [note](qint64, qint64, qint64, const std::vector<RankStepEvent>& rows) { note("rankStepsLoaded", rows.size(), false); });
    QObject::connect(watcher, &StoreWatcher::polled, &app, [note](qint64) { note("polled", 0, false); });
}

// The same for the read jobs of the pages openRun points at the run besides Live (Logs, Pipeline):
// what their answers announce.
void notePageReads(TimedApp& app, MainWindow& window) {
    auto note = [&app](const char* what) {
        app.signalNote += std::string(app.signalNote.empty() ? "" : ", ") + what;
    };
    PipelineRunModel* pipeline = window.pipelinePage()->runModel();
    QObject::connect(pipeline, &PipelineRunModel::stepsRead, &app, [note] { note("Pipeline page: steps read"); });
    QObject::connect(pipeline, &PipelineRunModel::spansRead, &app, [note](qint64) { note("Pipeline page: spans read"); });
    QObject::connect(pipeline, &PipelineRunModel::bubblesRead, &app, [note] { note("Pipeline page: bubbles read"); });
    LogTableModel* logs = window.logsPage()->model();
    QObject::connect(logs, &LogTableModel::countChanged, &app, [note](int) { note("Logs page: count"); });
    QObject::connect(logs, &LogTableModel::pageLoaded, &app, [note](int, int) { note("Logs page: rows loaded"); });
}

// What the window measured while the run went on.
struct Measured {
    double wallS = 0;
    double cpuS = 0;
    SelfSample end;
    std::vector<double> redrawMs;
    std::vector<double> fullRedrawMs; // the whole Live page at once
    std::vector<double> stallMs;      // each timer gap past its interval
    std::vector<double> lineToScreenMs;
    double longestEventMs = 0;
    std::string longestEvent;
    int hosts = 0;
    QString firstHost; // the grid's first row at the end
    int exitStatus = -1;
};

bool childExited(pid_t pid, int& status) { return waitpid(pid, &status, WNOHANG) == pid; }

// Shows the run on the Live page once the store lists it, and measures until the supervisor exits.
std::optional<Measured> watchRun(TimedApp& app, MainWindow& window, const Options& o, pid_t supervisor) {
    Measured m;
    int status = 0;
    if (!QTest::qWaitFor([&] { return window.runsModel()->rowCount() > 0 || childExited(supervisor, status); }, 60000) ||
        window.runsModel()->rowCount() == 0) {
        std::cerr << "bench_ui_live: the run never appeared in the store\n";
        return std::nullopt;
    }
    window.openRun(window.runsModel()->record(0).id);
    DeviceGridModel* grid = window.livePage()->deviceModel();
    const int hosts = o.ranks / kRanksPerHost;
    if (!QTest::qWaitFor([&] { return grid->rowCount() >= hosts || childExited(supervisor, status); }, 60000) ||
        grid->rowCount() < hosts) {
        std::cerr << "bench_ui_live: the grid never held every host (" << grid->rowCount() << " of " << hosts << ")\n";
        return std::nullopt;
    }
    // Line to screen: a repaint shows the samples the grid held when it began.
    double shownT = grid->lastTime(), pendingT = 0;
    app.beforeRedraw = [&] { pendingT = grid->lastTime(); };
    app.afterRedraw = [&] {
        if (pendingT <= shownT) return;
        m.lineToScreenMs.push_back((epochNow() - pendingT) * 1000.0);
        shownT = pendingT;
    };
    // Stalls: the gaps of a 10 ms timer.
    QTimer tick;
    tick.setTimerType(Qt::PreciseTimer);
    tick.setInterval(10);
    Clock::time_point last = Clock::now();
    QObject::connect(&tick, &QTimer::timeout, [&] {
        const Clock::time_point now = Clock::now();
        m.stallMs.push_back(std::max(0.0, msBetween(last, now) - 10.0));
        last = now;
    });
    // Once a second, the whole page at once.
    QTimer full;
    full.setInterval(1000);
    QObject::connect(&full, &QTimer::timeout, [&] {
        app.forced = true;
        const Clock::time_point t = Clock::now();
        window.livePage()->repaint();
        m.fullRedrawMs.push_back(msBetween(t, Clock::now()));
        app.forced = false;
        app.forcedRan = true;
        last = Clock::now(); // not a stall of the console's
    });
    noteWatcherSignals(app, window.watcher());
    notePageReads(app, window);
    const SelfSample from = readSelf();
    const Clock::time_point start = Clock::now();
    app.redrawMs.clear();
    app.recording = true;
    last = Clock::now();
    tick.start();
    full.start();
    if (!QTest::qWaitFor([&] { return childExited(supervisor, status); }, static_cast<int>((o.seconds + 180) * 1000))) {
        std::cerr << "bench_ui_live: the supervisor did not end within " << o.seconds + 180 << " s; stopping it\n";
        kill(supervisor, SIGTERM);
        waitpid(supervisor, &status, 0);
    }
    tick.stop();
    full.stop();
    app.recording = false;
    app.beforeRedraw = app.afterRedraw = nullptr;
    m.wallS = std::chrono::duration<double>(Clock::now() - start).count();
    m.end = readSelf();
    m.cpuS = m.end.cpuSeconds - from.cpuSeconds;
    m.redrawMs = app.redrawMs;
    m.longestEventMs = app.longestEventMs;
    m.longestEvent = app.longestEvent;
    m.hosts = grid->rowCount();
    m.firstHost = grid->headerData(0, Qt::Vertical).toString();
    m.exitStatus = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return m;
}

std::string fixed(double v, int digits) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", digits, v);
    return buf;
}

void report(const Options& o, const Measured& m) {
    const double cores = m.wallS > 0 ? m.cpuS / m.wallS : 0;
    const double hwmMB = m.end.hwmBytes / 1e6;
    const double p95 = percentile(m.redrawMs, 0.95);
    double stall = 0;
    for (double s : m.stallMs) stall = std::max(stall, s);
    std::vector<BenchRow> rows;
    rows.push_back({"window measured (grid full -> supervisor exit)", "", fixed(m.wallS, 1) + " s", true});
    rows.push_back({"hosts in the grid (first row)", std::to_string(o.ranks / kRanksPerHost),
                    std::to_string(m.hosts) + " (" + m.firstHost.toStdString() + ")", m.hosts == o.ranks / kRanksPerHost});
    rows.push_back({"repaints", "", std::to_string(m.redrawMs.size()) + " (" +
                                        fixed(static_cast<double>(m.redrawMs.size()) / std::max(1.0, m.wallS), 1) + "/s)",
                    true});
    rows.push_back({"redraw (median)", "< 50 ms", ms(percentile(m.redrawMs, 0.5)), percentile(m.redrawMs, 0.5) < 50});
    rows.push_back({"redraw (p95)", "< 50 ms", ms(p95), p95 < 50});
    rows.push_back({"redraw (max)", "", ms(percentile(m.redrawMs, 1.0)), true});
    const double fullMedian = percentile(m.fullRedrawMs, 0.5), fullMax = percentile(m.fullRedrawMs, 1.0);
    rows.push_back({"whole Live page repainted, 1/s (median)", "< 50 ms", ms(fullMedian), fullMedian < 50});
    rows.push_back({"whole Live page repainted, 1/s (max)", "< 50 ms", ms(fullMax), fullMax < 50});
    size_t over50 = 0;
    for (double s : m.stallMs) over50 += s > 50 ? 1 : 0;
    rows.push_back({"longest GUI-thread stall", "", ms(stall), true});
    rows.push_back({"GUI-thread stalls over 50 ms", "", std::to_string(over50), true});
    rows.push_back({"longest event: " + m.longestEvent, "", ms(m.longestEventMs), true});
    rows.push_back({"console CPU (cores)", "< 1", fixed(cores, 3), cores < 1});
    rows.push_back({"console peak RSS (VmHWM)", "< 500 MB", fixed(hwmMB, 0) + " MB", hwmMB < 500});
    rows.push_back({"console RSS at the end", "", fixed(m.end.rssBytes / 1e6, 0) + " MB", true});
    rows.push_back({"device sample line -> on screen (median / p95)", "",
                    ms(percentile(m.lineToScreenMs, 0.5)) + " / " + ms(percentile(m.lineToScreenMs, 0.95)), true});
    printTable("Live page at " + std::to_string(o.ranks) + " ranks (" + std::to_string(o.size.width()) + "x" +
                   std::to_string(o.size.height()) + ", offscreen) while the supervisor writes a " +
                   fixed(o.seconds, 0) + " s run",
               rows);
}

// The offscreen platform says, at every window, what it cannot do; nothing the figures need.
QtMessageHandler defaultHandler = nullptr;
void quietOffscreen(QtMsgType type, const QMessageLogContext& context, const QString& message) {
    if (message.contains(QLatin1String("does not support propagateSizeHints"))) return;
    if (defaultHandler) defaultHandler(type, context, message);
}

} // namespace

int main(int argc, char** argv) {
    if (argc > 1 && std::string(argv[1]) == "--supervise") return supervise(argc, argv);
    const Options o = readOptions(argc, argv);
    if (qEnvironmentVariableIsEmpty("DISPLAY") && qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY") &&
        qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) {
        qputenv("QT_QPA_PLATFORM", "offscreen");
    }
    char tmpl[] = "/tmp/parallax-ui-live-XXXXXX";
    if (!mkdtemp(tmpl)) {
        std::cerr << "bench_ui_live: cannot create a folder in /tmp: " << std::strerror(errno) << "\n";
        return 1;
    }
    const std::string dir = tmpl;
    const std::string store = dir + "/parallax.db";
    setenv(kSecondsEnv, std::to_string(o.seconds).c_str(), 1);
    setenv(kHangAtEnv, "-1", 1);
    setenv(kStragglerEnv, "1", 1);
    setenv(kCountsEnv, (dir + "/lines-written.txt").c_str(), 1);
    unsetenv(kRanksEnv);
    // The console's settings apart from a person's own.
    setenv("XDG_CONFIG_HOME", (dir + "/config").c_str(), 1);
    defaultHandler = qInstallMessageHandler(quietOffscreen);
    TimedApp app(argc, argv);
    { RunStore created(store); } // made here, so that the console and the supervisor open the same file

    MainWindow window(QString::fromStdString(store));
    window.resize(o.size);
    window.show();
    if (!QTest::qWaitForWindowExposed(&window)) {
        std::cerr << "bench_ui_live: the window was not shown\n";
        return 1;
    }
    const pid_t supervisor = startSupervisor(store, o, dir + "/supervisor.log");
    const std::optional<Measured> m = watchRun(app, window, o, supervisor);
    if (!m) {
        kill(supervisor, SIGTERM);
        int status = 0;
        waitpid(supervisor, &status, 0);
        std::cerr << "bench_ui_live: kept " << dir << " (see supervisor.log)\n";
        return 1;
    }
    report(o, *m);
    if (m->exitStatus != 0) std::cerr << "bench_ui_live: the supervisor exited with " << m->exitStatus << "; see " << dir << "/supervisor.log\n";
    if (o.keep || m->exitStatus != 0) std::cerr << "bench_ui_live: kept " << dir << "\n";
    else fs::remove_all(dir);
    return m->exitStatus == 0 ? 0 : 1;
}
