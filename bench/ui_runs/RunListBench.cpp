// How long the Runs page takes to show and filter 10,000 runs: the store query (made on the
// watcher's thread), the model reset with a fresh snapshot, the merge of a refreshed snapshot, and
// the proxy's text filter, state filter and sort (all in the GUI thread). Goal: reset + filter under
// 100 ms. Prints a table; the median of the repetitions after one warm-up.
#include "core/spec/SpecIO.h"
#include "core/store/RunStore.h"
#include "ui/models/RunFilterModel.h"
#include "ui/models/RunListModel.h"

#include <QCoreApplication>
#include <QTemporaryDir>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

using namespace parallax;

namespace {

constexpr int kRuns = 10000;
constexpr int kRepeats = 15;
constexpr double kGoalMs = 100.0;

double medianMs(const std::function<void()>& setup, const std::function<void()>& body) {
    std::vector<double> times;
    for (int i = 0; i <= kRepeats; ++i) {
        setup();
        const auto t0 = std::chrono::steady_clock::now();
        body();
        const auto t1 = std::chrono::steady_clock::now();
        if (i > 0) times.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count()); // 0: warm-up
    }
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
}

// Runs as a sweep leaves them: several models and layouts, most finished, a few going.
void fillStore(RunStore& store) {
    const char* kinds[] = {"gpt", "qwen_image", "qwen2_5_vl"};
    const char* layouts[] = {"dp8 tp1 pp1 zero0", "dp4 tp2 pp1 zero1", "dp2 tp2 pp2 zero0", "dp16 tp1 pp1 zero3"};
    const RunState states[] = {RunState::Succeeded, RunState::Succeeded, RunState::Succeeded,
                               RunState::Failed,    RunState::Stopped,   RunState::Lost};
    RunSpec spec;
    spec.data.kind = DataKind::Synthetic;
    store.beginTransaction();
    for (int i = 0; i < kRuns; ++i) {
        NewRun n;
        spec.model.kind = Choice<ModelKind>::named(kinds[i % 3]);
        spec.name = std::string(kinds[i % 3]) + "-sweep-lr" + std::to_string(i % 17) + "-" + std::to_string(i);
        spec.train.lr = 1e-4 * double(1 + i % 17);
        n.name = spec.name;
        n.spec_toml = toToml(spec);
        n.model_kind = spec.model.kind.name();
        n.layout = layouts[i % 4];
        n.steps_total = 1000;
        n.world_size = 8;
        if (i % 7 == 0) n.tags = {"baseline", "sweep-" + std::to_string(i / 100)};
        const int64_t id = store.createRun(n);
        if (i % 500 == 0) continue; // still queued
        store.markRunning(id, 100000 + i, "node" + std::to_string(i % 32));
        StepEvent last;
        last.step = 999;
        last.loss = 2.0 + double(i % 101) / 50.0;
        last.tokens_per_s = 50000.0 + double(i % 977) * 10.0;
        last.mfu = 0.3;
        store.updateSummary(id, last);
        if (i % 250 != 0) store.finishRun(id, states[i % 6], 0, "");
        if (i % 13 == 0) store.setNotes(id, "loss spike at step " + std::to_string(i % 900) + ", lowered lr");
    }
    store.commit();
}

struct Row {
    std::string what;
    double ms;
    bool goal;
};

} // namespace

int main(int argc, char** argv) {
    QCoreApplication app(argc, argv);
    QTemporaryDir dir;
    RunStore store(dir.filePath(QStringLiteral("bench.db")).toStdString());
    std::fprintf(stderr, "filling a store with %d runs...\n", kRuns);
    fillStore(store);

    std::vector<RunRecord> snapshot;
    std::vector<Row> rows;
    rows.push_back({"store: listRuns (watcher thread)", medianMs([] {}, [&] { snapshot = store.listRuns(); }), false});

    RunListModel model;
    RunFilterModel filter;
    filter.setSourceModel(&model);
    filter.sort(RunListModel::IdColumn, Qt::DescendingOrder);

    // rowCount() makes the proxy map and sort the rows now, as the view showing them would.
    const double reset = medianMs([&] { model.setRuns({}); },
                                  [&] {
                                      model.setRuns(snapshot);
                                      filter.rowCount();
                                  });
    rows.push_back({"model reset, shown sorted by id", reset, false});

    // A refresh while runs train: the same runs, a few of them advanced.
    std::vector<RunRecord> refreshed = snapshot;
    for (size_t i = 0; i < refreshed.size(); i += 250) refreshed[i].last_step += 1;
    const double merge = medianMs([&] { model.setRuns(snapshot); },
                                  [&] {
                                      model.setRuns(refreshed);
                                      filter.rowCount();
                                  });
    rows.push_back({"merge of a refreshed snapshot (40 rows changed)", merge, false});

    const double text = medianMs([&] { filter.setFilterText({}); }, [&] { filter.setFilterText(QStringLiteral("mmdit lr3")); });
    const size_t textRows = size_t(filter.rowCount());
    rows.push_back({"text filter \"mmdit lr3\" (" + std::to_string(textRows) + " rows)", text, false});
    filter.setFilterText({});

    const double state =
        medianMs([&] { filter.setStates({}); }, [&] { filter.setStates({QStringLiteral("failed")}); });
    rows.push_back({"state filter \"failed\" (" + std::to_string(filter.rowCount()) + " rows)", state, false});
    filter.setStates({});

    const double sort = medianMs([&] { filter.sort(RunListModel::IdColumn, Qt::DescendingOrder); },
                                 [&] { filter.sort(RunListModel::LossColumn, Qt::AscendingOrder); });
    rows.push_back({"sort by loss", sort, false});

    // The goal: a fresh list shown and filtered in under 100 ms.
    filter.sort(RunListModel::IdColumn, Qt::DescendingOrder);
    const double both = medianMs(
        [&] {
            filter.setFilterText({});
            model.setRuns({});
        },
        [&] {
            model.setRuns(snapshot);
            filter.setFilterText(QStringLiteral("baseline"));
            filter.rowCount();
        });
    rows.push_back({"model reset + text filter \"baseline\"", both, true});

    std::printf("\nRuns page, %d runs (median of %d after a warm-up)\n", kRuns, kRepeats);
    std::printf("| %-48s | %10s | %-8s |\n", "step", "median", "goal");
    std::printf("|%s|%s|%s|\n", std::string(50, '-').c_str(), std::string(12, '-').c_str(), std::string(10, '-').c_str());
    bool ok = true;
    for (const Row& r : rows) {
        std::string goal = "-";
        if (r.goal) {
            goal = r.ms < kGoalMs ? "< 100 ms" : "MISSED";
            ok &= r.ms < kGoalMs;
        }
        std::printf("| %-48s | %7.2f ms | %-8s |\n", r.what.c_str(), r.ms, goal.c_str());
    }
    std::fflush(stdout);
    return ok ? 0 : 1;
}
