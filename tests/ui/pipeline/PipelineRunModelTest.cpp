#include "PipelineTestSupport.h"

#include "core/spec/ModelDims.h"
#include "core/spec/ModelKinds.h"
#include "core/spec/StageBalance.h"
#include "ui/models/PipelineRunModel.h"
#include "ui/models/StoreWatcher.h"

#include <QSignalSpy>

#include <gtest/gtest.h>

#include <vector>

using namespace parallax;
using namespace parallax::test;

namespace {

struct Fixture {
    PipelineStore store;
    StoreWatcher watcher{store.qpath()};
    PipelineRunModel model{&watcher};
    // The run each stepsRead was about, and the step of each spansRead, in order.
    std::vector<int64_t> stepsAnswers;
    std::vector<int64_t> spansAnswers;

    Fixture() {
        watcher.setInterval(20);
        QObject::connect(&model, &PipelineRunModel::stepsRead, &model, [this] {
            const auto& r = model.runSteps();
            stepsAnswers.push_back(r.record ? r.record->id : -1);
        });
        QObject::connect(&model, &PipelineRunModel::spansRead, &model,
                         [this](qint64 step) { spansAnswers.push_back(step); });
    }
    bool quiet() { return !model.isLoading() && watcher.pendingReads() == 0; }
};

} // namespace

TEST(PipelineRunModel, ReadsTheScheduleAndHoldsBackTheNewestStepOfARunningRun) {
    Fixture f;
    const int64_t run = f.store.addRun(pipelineSpec("pp4-interleaved", 4, 8, Schedule::Interleaved, 2, 2, 1));
    f.store.writeSpans(run, PipelineSpans{}.make(0));
    f.store.writeSpans(run, PipelineSpans{}.make(10));
    QSignalSpy read(&f.model, &PipelineRunModel::stepsRead);
    f.model.setRun(run);
    EXPECT_TRUE(f.model.isLoading());
    ASSERT_TRUE(waitFor([&] { return read.count() >= 1; }));

    const PipelineRunModel::RunSteps& r = f.model.runSteps();
    ASSERT_TRUE(r.record.has_value());
    EXPECT_EQ(r.record->id, run);
    EXPECT_FALSE(r.ended);
    // Step 10 is the newest of a running run: some ranks may not have written it yet.
    EXPECT_EQ(r.steps, (std::vector<int64_t>{0}));
    ASSERT_TRUE(r.schedule.has_value());
    EXPECT_EQ(r.schedule->stages, 4);
    EXPECT_EQ(r.schedule->microbatches, 8);
    EXPECT_EQ(r.schedule->virtualStages, 2);
    EXPECT_TRUE(r.schedule->kind == Schedule::Interleaved);
    EXPECT_TRUE(r.scheduleWhy.isEmpty());
    EXPECT_EQ(r.spanEvery, 10);
    EXPECT_EQ(r.dp, 2);
    EXPECT_EQ(r.tp, 1);

    // Ended: every sampled step is complete.
    f.store.finish(run);
    ASSERT_TRUE(waitFor([&] { return f.model.runSteps().ended; }, 15000));
    EXPECT_EQ(f.model.runSteps().steps, (std::vector<int64_t>{0, 10}));
}

TEST(PipelineRunModel, NewStepsOfARunningRunAreReadAsTheStoreChanges) {
    Fixture f;
    const int64_t run = f.store.addRun(pipelineSpec("live", 4, 8));
    f.store.writeSpans(run, PipelineSpans{}.make(0));
    f.model.setRun(run);
    ASSERT_TRUE(waitFor([&] { return !f.stepsAnswers.empty(); }));
    EXPECT_TRUE(f.model.runSteps().steps.empty());

    // Nobody asks: the watcher's polls bring the new steps in.
    f.store.writeSpans(run, PipelineSpans{}.make(10));
    f.store.writeSpans(run, PipelineSpans{}.make(20));
    ASSERT_TRUE(waitFor([&] { return f.model.runSteps().steps.size() == 2; }, 15000));
    EXPECT_EQ(f.model.runSteps().steps, (std::vector<int64_t>{0, 10}));
}

TEST(PipelineRunModel, SaysWhyASpecGivesNoSchedule) {
    Fixture f;
    NewRun none;
    none.name = "no-spec";
    const int64_t noSpec = f.store.store.createRun(none);
    NewRun bad;
    bad.name = "bad-spec";
    bad.spec_toml = "[parallel]\npp = \"four\"\n";
    const int64_t badSpec = f.store.store.createRun(bad);

    f.model.setRun(noSpec);
    ASSERT_TRUE(waitFor([&] { return f.stepsAnswers.size() == 1; }));
    EXPECT_FALSE(f.model.runSteps().schedule.has_value());
    EXPECT_TRUE(f.model.runSteps().scheduleWhy.contains(QStringLiteral("no spec stored")))
        << f.model.runSteps().scheduleWhy.toStdString();
    EXPECT_EQ(f.model.runSteps().spanEvery, -1);

    f.model.setRun(badSpec);
    ASSERT_TRUE(waitFor([&] { return f.stepsAnswers.size() == 2; }));
    EXPECT_FALSE(f.model.runSteps().schedule.has_value());
    const std::string why = f.model.runSteps().scheduleWhy.toStdString();
    EXPECT_NE(why.find("run " + std::to_string(badSpec) + " spec:2"), std::string::npos) << why;
    EXPECT_NE(why.find("parallel.pp"), std::string::npos) << why;
}

TEST(PipelineRunModel, ARunNotInTheStoreHasNoRecord) {
    Fixture f;
    f.model.setRun(4711);
    ASSERT_TRUE(waitFor([&] { return !f.stepsAnswers.empty(); }));
    EXPECT_EQ(f.stepsAnswers, (std::vector<int64_t>{-1}));
    EXPECT_FALSE(f.model.runSteps().record.has_value());
    EXPECT_TRUE(f.model.runSteps().steps.empty());
}

TEST(PipelineRunModel, AnswersAboutARunNoLongerChosenAreDropped) {
    Fixture f;
    const int64_t a = f.store.addRun(pipelineSpec("a", 4, 8));
    f.store.writeSpans(a, PipelineSpans{}.make(0));
    f.store.finish(a);
    PipelineSpans two;
    two.stages = 2;
    const int64_t b = f.store.addRun(pipelineSpec("b", 2, 8));
    f.store.writeSpans(b, two.make(0));
    f.store.writeSpans(b, two.make(10));
    f.store.finish(b);

    f.model.setRun(a);
    const uint64_t first = f.model.generation();
    f.model.requestSpans(0); // of run a, still in flight when b is chosen
    f.model.setRun(b);
    EXPECT_GT(f.model.generation(), first);
    ASSERT_TRUE(waitFor([&] { return !f.stepsAnswers.empty() && f.quiet(); }));
    // Only run b was announced, though run a's read was answered first.
    for (int64_t id : f.stepsAnswers) EXPECT_EQ(id, b);
    EXPECT_TRUE(f.spansAnswers.empty());
    EXPECT_EQ(f.model.runSteps().steps, (std::vector<int64_t>{0, 10}));
    EXPECT_EQ(f.model.runSteps().schedule->stages, 2);
    // The bubble history is run b's own.
    ASSERT_TRUE(waitFor([&] { return f.model.bubbleHistory().steps().size() == 2; }));
    EXPECT_EQ(f.model.bubbleHistory().steps().front().step, 0);
    EXPECT_EQ(f.model.bubbleHistory().steps().back().step, 10);

    // Choosing no run forgets everything.
    f.model.setRun(0);
    EXPECT_FALSE(f.model.runSteps().record.has_value());
    EXPECT_TRUE(f.model.bubbleHistory().steps().empty());
    EXPECT_FALSE(f.model.isLoading());
}

TEST(PipelineRunModel, OnlyTheNewestStepAskedForIsAnnounced) {
    Fixture f;
    const int64_t run = f.store.addRun(pipelineSpec("pp4", 4, 8));
    for (int64_t step : {0, 10, 20}) f.store.writeSpans(run, PipelineSpans{}.make(step));
    f.store.finish(run);
    f.model.setRun(run);
    ASSERT_TRUE(waitFor([&] { return !f.stepsAnswers.empty(); }));

    f.model.requestSpans(0);
    f.model.requestSpans(20);
    f.model.requestSpans(10);
    ASSERT_TRUE(waitFor([&] { return !f.spansAnswers.empty() && f.quiet(); }));
    EXPECT_EQ(f.spansAnswers, (std::vector<int64_t>{10}));
    ASSERT_TRUE(f.model.spansStep().has_value());
    EXPECT_EQ(*f.model.spansStep(), 10);
    const std::vector<SpanEvent> expected = f.store.store.spans(run, 10);
    ASSERT_EQ(f.model.spans().size(), expected.size());
    ASSERT_FALSE(expected.empty());
    for (const SpanEvent& s : f.model.spans()) EXPECT_EQ(s.step, 10);
}

TEST(PipelineRunModel, MeasuresTheBubbleOfEverySampledStepAgainstTheTheory) {
    Fixture f;
    const int64_t run = f.store.addRun(pipelineSpec("pp4", 4, 8));
    for (int64_t step : {0, 10, 20}) f.store.writeSpans(run, PipelineSpans{}.make(step));
    f.store.finish(run);
    QSignalSpy bubbles(&f.model, &PipelineRunModel::bubblesRead);
    f.model.setRun(run);
    ASSERT_TRUE(waitFor([&] { return f.model.bubbleHistory().steps().size() == 3; }));
    EXPECT_GE(bubbles.count(), 1);
    for (const BubbleHistory::Step& s : f.model.bubbleHistory().steps()) {
        ASSERT_TRUE(s.overall.has_value()) << s.step;
        // 1F1B on 4 stages and 8 micro-batches, as scheduled: 3 idle units in 11.
        EXPECT_DOUBLE_EQ(*s.overall, 3.0 / 11.0) << s.step;
    }
    EXPECT_EQ(f.model.bubbleHistory().measured()->size(), 3u);
    f.model.setTheoreticalBubble(3.0 / 11.0);
    ASSERT_TRUE(f.model.bubbleHistory().theoretical().has_value());
    EXPECT_DOUBLE_EQ(*f.model.bubbleHistory().theoretical(), 3.0 / 11.0);
}

TEST(PipelineRunModel, ReadGivesWhatTheStoreHolds) {
    PipelineStore store;
    const int64_t run = store.addRun(pipelineSpec("gpipe", 2, 4, Schedule::GPipe));
    PipelineSpans spans;
    spans.stages = 2;
    spans.microbatches = 4;
    spans.schedule = Schedule::GPipe;
    store.writeSpans(run, spans.make(0));
    store.writeSpans(run, spans.make(10));
    store.finish(run);
    const PipelineRunModel::RunSteps r = PipelineRunModel::read(store.store, run);
    ASSERT_TRUE(r.record.has_value());
    EXPECT_TRUE(r.ended);
    EXPECT_EQ(r.steps, (std::vector<int64_t>{0, 10}));
    ASSERT_TRUE(r.schedule.has_value());
    EXPECT_TRUE(r.schedule->kind == Schedule::GPipe);
    EXPECT_EQ(r.schedule->kind.name(), "gpipe");
    EXPECT_EQ(r.schedule->microbatches, 4);
}

// A run split by measured time shows its split, its slowest stage and each stage's time beside the
// split by FLOPs, all from the unit times the run kept.
TEST(PipelineRunModel, ReadSaysHowTheStagesAreSplitAndWhatEachSplitCosts) {
    PipelineStore store;
    RunSpec spec = pipelineSpec("balanced", 2, 4);
    spec.model.kind = ModelKind::Qwen2_5_Vl; // 4 vision blocks, then 2 of the language model
    spec.model.preset = "tiny";
    const RunSpec byFlops = spec;
    spec.parallel.stage_split = StageSplit::Profile;
    spec.parallel.stage_layers = {4, 2};
    const int64_t run = store.addRun(spec);
    const int64_t flopsRun = store.addRun(byFlops);
    // The last four units twice as slow as the others.
    const ModelDims dims = resolveModel(spec.model);
    const int units = static_cast<int>(modelKindInfo(dims.kind).units(dims).size());
    std::vector<UnitTimeEvent> times;
    for (int u = 0; u < units; ++u) {
        UnitTimeEvent t;
        t.unit = u;
        t.forward_ms = u >= units - 4 ? 2 : 1;
        t.backward_ms = u >= units - 4 ? 4 : 2;
        times.push_back(t);
    }
    store.store.insertEvents(run, times);

    const PipelineRunModel::RunSteps r = PipelineRunModel::read(store.store, run);
    EXPECT_TRUE(r.stageSplit.contains(QStringLiteral("blocks per stage [4, 2] by measured time"))) << r.stageSplit.toStdString();
    std::vector<MeasuredUnit> measured;
    for (const UnitTimeEvent& t : times) measured.push_back({t.unit, t.forward_ms, t.backward_ms});
    const StageBalance flops = balanceStages(byFlops, measured);
    const StageBalance mine = balanceStages(spec, measured);
    EXPECT_TRUE(r.stageSplit.contains(QStringLiteral("slowest stage %1 ms").arg(mine.slowestBefore(), 0, 'f', 2)))
        << r.stageSplit.toStdString();
    EXPECT_TRUE(r.stageSplit.contains(QStringLiteral("by FLOPs [%1, %2]: %3 ms")
                                          .arg(flops.before_layers[0])
                                          .arg(flops.before_layers[1])
                                          .arg(flops.slowestBefore(), 0, 'f', 2)))
        << r.stageSplit.toStdString();
    EXPECT_TRUE(r.stageSplit.contains(QStringLiteral("each stage %1 / %2 ms (by FLOPs %3 / %4 ms)")
                                          .arg(mine.before_ms[0], 0, 'f', 2)
                                          .arg(mine.before_ms[1], 0, 'f', 2)
                                          .arg(flops.before_ms[0], 0, 'f', 2)
                                          .arg(flops.before_ms[1], 0, 'f', 2)))
        << r.stageSplit.toStdString();

    // Without times: the split alone; without a pipeline: nothing.
    const PipelineRunModel::RunSteps plain = PipelineRunModel::read(store.store, flopsRun);
    EXPECT_TRUE(plain.stageSplit.startsWith(QStringLiteral("blocks per stage ["))) << plain.stageSplit.toStdString();
    EXPECT_TRUE(plain.stageSplit.endsWith(QStringLiteral("by FLOPs"))) << plain.stageSplit.toStdString();
    const int64_t single = store.addRun(pipelineSpec("single", 1, 4));
    EXPECT_TRUE(PipelineRunModel::read(store.store, single).stageSplit.isEmpty());
}
