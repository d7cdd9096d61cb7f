#pragma once

#include "core/spec/RunSpec.h"
#include "core/spec/SpecIO.h"
#include "core/store/RunStore.h"

#include "ui/pages/SpecIssuesPanel.h"

#include <QByteArray>
#include <QDir>
#include <QFile>
#include <QListWidget>
#include <QSettings>
#include <QString>
#include <QStringList>
#include <QTemporaryDir>
#include <QTest>

#include <cmath>
#include <optional>
#include <string>
#include <vector>

namespace parallax::test {

// A store in a fresh temporary folder with runs written the way a supervisor writes them.
struct CraftedStore {
    QTemporaryDir dir;
    std::string path = dir.filePath(QStringLiteral("parallax.db")).toStdString();
    RunStore store{path};

    QString qpath() const { return QString::fromStdString(path); }

    // A run of `spec` in `state` with `steps` step rows (loss falling from `loss0`), started at
    // `start` (seconds since the epoch) and taking one second per step.
    int64_t addRun(const RunSpec& spec, RunState state, int64_t steps, double loss0 = 4.0,
                   double start = 1.7e9, const std::vector<std::string>& tags = {}) {
        return addRunFrom(spec, std::nullopt, 0, state, steps, loss0, start, tags);
    }

    // A run that continues `parent` from its checkpoint at `fromStep` (Resume), with step rows
    // fromStep .. fromStep + steps - 1.
    int64_t addContinuation(const RunSpec& spec, int64_t parent, int64_t fromStep, RunState state,
                            int64_t steps, double loss0 = 4.0, double start = 1.7e9 + 3600) {
        return addRunFrom(spec, parent, fromStep, state, steps, loss0, start, {});
    }

private:
    int64_t addRunFrom(const RunSpec& spec, std::optional<int64_t> parent, int64_t fromStep,
                       RunState state, int64_t steps, double loss0, double start,
                       const std::vector<std::string>& tags) {
        NewRun n;
        n.name = spec.name;
        n.spec_toml = toToml(spec);
        n.model_kind = spec.model.kind.name();
        n.layout = "dp" + std::to_string(spec.parallel.dp) + " tp" + std::to_string(spec.parallel.tp) + " pp" +
                   std::to_string(spec.parallel.pp) + " zero" + std::to_string(spec.parallel.zero);
        n.steps_total = spec.train.steps;
        n.world_size = int(spec.worldSize());
        n.parent_run = parent;
        n.tags = tags;
        const int64_t id = store.createRun(n);
        if (state == RunState::Queued) return id;
        store.markRunning(id, 1000 + id, "testhost");
        RunStartEvent startEvent;
        startEvent.world = n.world_size;
        startEvent.dp = int(spec.parallel.dp);
        startEvent.tp = int(spec.parallel.tp);
        startEvent.pp = int(spec.parallel.pp);
        startEvent.params = 123456;
        startEvent.t = start;
        store.setRunStart(id, startEvent);
        StepEvent last;
        for (int64_t s = fromStep; s < fromStep + steps; ++s) {
            StepEvent e;
            e.step = s;
            e.loss = loss0 * std::exp(-0.05 * double(s)) + 0.1;
            e.lr = 1e-3;
            e.grad_norm = 1.0 + 0.01 * double(s);
            e.tokens_per_s = 1000.0 + double(s);
            e.samples_per_s = 10.0;
            e.step_ms = 100.0;
            e.step_ms_min = 95.0;
            e.step_ms_max = 110.0;
            e.mfu = 0.25;
            e.tokens = (s + 1) * 512;
            e.peak_mem = 1.5e9;
            e.t = start + double(s - fromStep);
            store.insertMetric(id, e);
            last = e;
        }
        if (steps > 0) store.updateSummary(id, last);
        if (isTerminal(state)) store.finishRun(id, state, state == RunState::Succeeded ? 0 : 1, "test");
        return id;
    }
};

// A stand-in for parallax-cli in `dir`: writes its arguments, one a line, to `dir`/args, prints
// `output` and exits with `exitCode`.
inline QString fakeCli(const QTemporaryDir& dir, const QByteArray& output, int exitCode) {
    const QString path = dir.filePath(QStringLiteral("parallax-cli"));
    QFile f(path);
    f.open(QIODevice::WriteOnly);
    f.write("#!/bin/sh\nprintf '%s\\n' \"$@\" > \"$(dirname \"$0\")/args\"\nprintf '" + output + "'\nexit " +
            QByteArray::number(exitCode) + "\n");
    f.close();
    f.setPermissions(QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
    return path;
}

inline RunSpec tinySpec(const std::string& name) {
    RunSpec s;
    s.name = name;
    s.model.kind = ModelKind::Gpt;
    s.model.preset = "tiny";
    s.data.kind = DataKind::Synthetic;
    s.train.steps = 20;
    s.train.global_batch = 8;
    s.train.micro_batch = 4;
    s.parallel.dp = 2;
    return s;
}

// Settings of one test, in a folder of its own.
struct IsolatedSettings {
    QTemporaryDir dir;
    IsolatedSettings() {
        QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, dir.path());
        QSettings().clear();
    }
};

template <typename Pred>
bool waitFor(Pred pred, int timeoutMs = 10000) {
    return QTest::qWaitFor(pred, timeoutMs);
}

// The lines of the Issues box (SpecIssuesPanel) within `page`.
inline QStringList shownIssues(const QWidget& page) {
    QStringList out;
    const auto* panel = page.findChild<parallax::SpecIssuesPanel*>();
    const QListWidget* list = panel ? panel->findChild<QListWidget*>() : nullptr;
    for (int i = 0; list && i < list->count(); ++i) out << list->item(i)->text();
    return out;
}

// Cluster profile folders of a test's own: $PARALLAX_CLUSTERS names `first` then `second`, and
// $XDG_CONFIG_HOME points at an empty folder, so that a person's ~/.config/parallax/clusters
// stays out. Both variables are restored at the end.
struct ProfileFolders {
    QTemporaryDir dir;
    QString first = dir.filePath(QStringLiteral("first"));
    QString second = dir.filePath(QStringLiteral("second"));
    QByteArray savedClusters = qgetenv("PARALLAX_CLUSTERS");
    QByteArray savedXdg = qgetenv("XDG_CONFIG_HOME");
    bool hadClusters = qEnvironmentVariableIsSet("PARALLAX_CLUSTERS");
    bool hadXdg = qEnvironmentVariableIsSet("XDG_CONFIG_HOME");

    ProfileFolders() {
        QDir().mkpath(first);
        QDir().mkpath(second);
        qputenv("PARALLAX_CLUSTERS", (first + QLatin1Char(':') + second).toLocal8Bit());
        qputenv("XDG_CONFIG_HOME", dir.filePath(QStringLiteral("config")).toLocal8Bit());
    }
    ~ProfileFolders() {
        if (hadClusters) qputenv("PARALLAX_CLUSTERS", savedClusters);
        else qunsetenv("PARALLAX_CLUSTERS");
        if (hadXdg) qputenv("XDG_CONFIG_HOME", savedXdg);
        else qunsetenv("XDG_CONFIG_HOME");
    }
    // Writes <folder>/<name>.toml; returns its path.
    static QString write(const QString& folder, const QString& name, const QByteArray& text) {
        const QString path = QDir(folder).filePath(name + QStringLiteral(".toml"));
        QFile f(path);
        if (!f.open(QIODevice::WriteOnly) || f.write(text) != text.size()) return {};
        return path;
    }
};

} // namespace parallax::test
