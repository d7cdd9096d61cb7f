#pragma once

#include "tests/support/PipelineSpans.h"

#include "core/spec/RunSpec.h"
#include "core/spec/SpecIO.h"
#include "core/store/BatchedWriter.h"
#include "core/store/RunStore.h"

#include <QString>
#include <QTemporaryDir>
#include <QTest>

#include <string>
#include <vector>

namespace parallax::test {

// A store in a fresh temporary folder, written as a supervisor writes it; the console's watcher
// reads it through a connection of its own.
struct PipelineStore {
    QTemporaryDir dir;
    std::string path = dir.filePath(QStringLiteral("parallax.db")).toStdString();
    RunStore store{path};

    QString qpath() const { return QString::fromStdString(path); }

    int64_t addRun(const RunSpec& spec, bool running = true) {
        NewRun n;
        n.name = spec.name;
        n.spec_toml = toToml(spec);
        n.model_kind = spec.model.kind.name();
        n.layout = "dp" + std::to_string(spec.parallel.dp) + " tp" + std::to_string(spec.parallel.tp) + " pp" +
                   std::to_string(spec.parallel.pp) + " zero0";
        n.steps_total = spec.train.steps;
        n.world_size = int(spec.worldSize());
        const int64_t id = store.createRun(n);
        if (running) store.markRunning(id, 4242, "testhost");
        return id;
    }

    void writeSpans(int64_t run, const std::vector<SpanEvent>& spans) {
        BatchedWriter writer(store, run);
        for (const SpanEvent& s : spans) writer.add(s);
        writer.flush();
    }

    void finish(int64_t run) { store.finishRun(run, RunState::Succeeded, 0, "done"); }
};

// pp stages, m micro-batches per step (global_batch = dp * micro_batch * m).
inline RunSpec pipelineSpec(const std::string& name, int pp, int m, Schedule schedule = Schedule::OneFOneB,
                            int chunks = 1, int dp = 1, int tp = 1) {
    RunSpec s;
    s.name = name;
    s.model.kind = ModelKind::Gpt;
    s.model.preset = "tiny";
    s.parallel.pp = pp;
    s.parallel.dp = dp;
    s.parallel.tp = tp;
    s.parallel.schedule = schedule;
    s.parallel.virtual_stages = chunks;
    s.train.micro_batch = 2;
    s.train.global_batch = int64_t(dp) * 2 * m;
    s.train.steps = 100;
    s.telemetry.span_every = 10;
    return s;
}

template <typename Pred>
bool waitFor(Pred pred, int timeoutMs = 10000) {
    return QTest::qWaitFor(pred, timeoutMs);
}

} // namespace parallax::test
