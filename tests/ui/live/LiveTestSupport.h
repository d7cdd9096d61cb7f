#pragma once

#include "core/store/BatchedWriter.h"
#include "core/store/RunStore.h"

#include <QCoreApplication>
#include <QString>
#include <QTemporaryDir>
#include <QTest>

#include <chrono>
#include <memory>
#include <string>

namespace parallax::test {

// A store file in a fresh temporary folder, with a writer connection of its own (the console's
// watcher opens another one, as it would against a supervisor).
struct TempStore {
    QTemporaryDir dir;
    std::string path = dir.filePath(QStringLiteral("parallax.db")).toStdString();
    RunStore store{path};

    QString qpath() const { return QString::fromStdString(path); }

    int64_t newRun(const std::string& name = "run", int64_t stepsTotal = 100, int world = 4) {
        NewRun r;
        r.name = name;
        r.steps_total = stepsTotal;
        r.world_size = world;
        r.layout = "dp" + std::to_string(world) + " tp1 pp1 zero0";
        return store.createRun(r);
    }
};

// Waits, running the event loop, until `pred` holds; false when `timeoutMs` passed first.
template <typename Pred>
bool waitFor(Pred pred, int timeoutMs = 10000) {
    return QTest::qWaitFor(pred, timeoutMs);
}

inline LogRow logLine(int rank, const std::string& level, const std::string& message, double t = 1.7e9) {
    LogRow r;
    r.rank = rank;
    r.host = rank < 0 ? "console" : "node" + std::to_string(rank / 2);
    r.level = LogLevel::fromName(level);
    r.stream = rank < 0 ? "supervisor" : "stdout";
    r.message = message;
    r.t = t;
    return r;
}

inline StepEvent stepEvent(int64_t step, double loss, double t) {
    StepEvent e;
    e.step = step;
    e.loss = loss;
    e.lr = 1e-3;
    e.grad_norm = 1.0;
    e.tokens_per_s = 5000;
    e.step_ms = 100;
    e.step_ms_min = 100;
    e.step_ms_max = 101;
    e.mfu = 0.3;
    e.tokens = (step + 1) * 1024;
    e.t = t;
    return e;
}

// A CPU rank's device sample on node0.
inline DeviceEvent cpuSample(int rank, double cpuPct, double t) {
    DeviceEvent e;
    e.rank = rank;
    e.host = "node0";
    e.cpu_pct = cpuPct;
    e.rss = 185.0 * 1024 * 1024;
    e.t = t;
    return e;
}

// One rank's step: how long it computed and waited in collectives.
inline RankStepEvent rankStep(int rank, int64_t step, double computeMs, double waitMs) {
    RankStepEvent e;
    e.rank = rank;
    e.step = step;
    e.compute_ms = computeMs;
    e.wait_ms = waitMs;
    e.t = 1.7e9 + static_cast<double>(step);
    return e;
}

// run_start of a CPU run with a rank on each of `hosts`.
inline RunStartEvent cpuRunStart(const std::vector<std::string>& hosts) {
    RunStartEvent start;
    start.world = static_cast<int>(hosts.size());
    start.device = "cpu";
    start.hosts = hosts;
    start.devices.assign(hosts.size(), "cpu");
    return start;
}

} // namespace parallax::test
