#include "core/store/BatchedWriter.h"
#include "core/store/EventTables.h"
#include "core/store/RunStore.h"
#include "tests/core/store/RawDb.h"
#include "tests/core/store/TempDir.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <stdexcept>

namespace parallax {
namespace {

using test::RawDb;
using test::TempDir;

RankStepEvent rankStep(int rank, int64_t step, double computeMs, double waitMs) {
    RankStepEvent e;
    e.rank = rank;
    e.step = step;
    e.compute_ms = computeMs;
    e.wait_ms = waitMs;
    e.t = 1000.0 + static_cast<double>(step);
    return e;
}

std::set<std::string> columns(RawDb& db, const std::string& table) {
    std::set<std::string> out;
    sqlite3_stmt* st = nullptr;
    sqlite3_prepare_v2(db.handle(), ("SELECT name FROM pragma_table_info('" + table + "')").c_str(), -1, &st, nullptr);
    while (sqlite3_step(st) == SQLITE_ROW) out.insert(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)));
    sqlite3_finalize(st);
    return out;
}

int64_t newRun(RunStore& store, const std::string& name) {
    NewRun r;
    r.name = name;
    return store.createRun(r);
}

TEST(EventTables, TheTableIsGeneratedFromTheEventsFields) {
    const EventTableSpec& spec = eventTableSpec<RankStepEvent>();
    EXPECT_EQ(spec.table, "rank_steps");
    ASSERT_EQ(spec.columns.size(), RankStepEvent::fields().size());
    for (size_t i = 0; i < spec.columns.size(); ++i) EXPECT_EQ(spec.columns[i].name, RankStepEvent::fields()[i].name);
    EXPECT_STREQ(spec.columns[0].type, "INTEGER"); // rank
    EXPECT_STREQ(spec.columns[2].type, "REAL");    // compute_ms
    EXPECT_EQ(spec.key, (std::vector<std::string>{"step", "rank"}));
    // Every event with a table, each once, this one among them.
    const std::vector<const EventTableSpec*>& all = eventTableSpecs();
    EXPECT_EQ(std::count(all.begin(), all.end(), &spec), 1);
    EXPECT_EQ(std::count(all.begin(), all.end(), &eventTableSpec<UnitTimeEvent>()), 1);
    EXPECT_EQ(std::count(all.begin(), all.end(), &eventTableSpec<CollectiveTimeEvent>()), 1);
    for (const EventTableSpec* other : {&eventTableSpec<DeviceEvent>(), &eventTableSpec<CommEvent>(),
                                        &eventTableSpec<CheckpointEvent>(), &eventTableSpec<SampleEvent>()})
        EXPECT_EQ(std::count(all.begin(), all.end(), other), 1) << other->table;
    EXPECT_EQ(all.size(), 7u);
}

struct ListEvent {
    int64_t step = 0;
    std::vector<double> values;
    static constexpr std::string_view kName = "list_event";
    static const std::vector<EventField<ListEvent>>& fields() {
        static const std::vector<EventField<ListEvent>> f = {eventField("step", &ListEvent::step),
                                                             eventField("values", &ListEvent::values)};
        return f;
    }
    static EventTable table() { return {"list_events", {"step"}}; }
};

struct BadKeyEvent {
    int64_t step = 0;
    static constexpr std::string_view kName = "bad_key";
    static const std::vector<EventField<BadKeyEvent>>& fields() {
        static const std::vector<EventField<BadKeyEvent>> f = {eventField("step", &BadKeyEvent::step)};
        return f;
    }
    static EventTable table() { return {"bad_keys", {"rank"}}; }
};

TEST(EventTables, AnEventThatCannotHaveOneSaysWhy) {
    try {
        eventTableSpec<ListEvent>();
        FAIL() << "a list field was accepted";
    } catch (const std::logic_error& e) {
        EXPECT_NE(std::string(e.what()).find("list_event.values"), std::string::npos) << e.what();
    }
    try {
        eventTableSpec<BadKeyEvent>();
        FAIL() << "a key that is no field was accepted";
    } catch (const std::logic_error& e) {
        EXPECT_NE(std::string(e.what()).find("\"rank\""), std::string::npos) << e.what();
    }
}

TEST(EventTables, RowsRoundTripAreReplacedByKeyAndReadAfterAKey) {
    TempDir dir;
    RunStore store(dir.file("parallax.db"));
    const int64_t run = newRun(store, "steps");
    const int64_t other = newRun(store, "other");
    store.insertEvents(run, std::vector<RankStepEvent>{rankStep(1, 0, 80, 20), rankStep(0, 0, 50, 50),
                                                       rankStep(0, 1, std::nan(""), 1.5), rankStep(1, 1, 70, 30)});
    store.insertEvents(other, std::vector<RankStepEvent>{rankStep(0, 0, 1, 1)});
    store.insertEvents(run, std::vector<RankStepEvent>{rankStep(1, 0, 90, 10)}); // the same key again

    const std::vector<RankStepEvent> rows = store.events<RankStepEvent>(run);
    ASSERT_EQ(rows.size(), 4u);
    // In key order: step, then rank.
    EXPECT_EQ(rows[0].step, 0);
    EXPECT_EQ(rows[0].rank, 0);
    EXPECT_EQ(rows[1].rank, 1);
    EXPECT_EQ(rows[1].compute_ms, 90); // replaced
    EXPECT_EQ(rows[1].wait_ms, 10);
    EXPECT_EQ(rows[1].t, 1000.0);
    EXPECT_TRUE(std::isnan(rows[2].compute_ms)); // NaN stored as NULL reads back as NaN
    EXPECT_EQ(rows[2].wait_ms, 1.5);

    const std::vector<RankStepEvent> later = store.events<RankStepEvent>(run, 0);
    ASSERT_EQ(later.size(), 2u);
    EXPECT_EQ(later[0].step, 1);
    EXPECT_EQ(store.events<RankStepEvent>(other).size(), 1u);

    store.deleteRun(run);
    EXPECT_TRUE(store.events<RankStepEvent>(run).empty());
    EXPECT_EQ(store.events<RankStepEvent>(other).size(), 1u);
}

TEST(EventTables, AReadCanLeaveOutLargeFields) {
    TempDir dir;
    RunStore store(dir.file("parallax.db"));
    const int64_t run = newRun(store, "samples");
    std::vector<SampleEvent> rows;
    for (int64_t step : {0, 10})
        for (int64_t index : {0, 1}) {
            SampleEvent e;
            e.step = step;
            e.index = index;
            e.seed = 42 + index;
            e.width = 64;
            e.prompt = "a fox";
            e.png = std::string(100000, 'A');
            e.ms = 12;
            e.t = 1000.0;
            rows.push_back(e);
        }
    store.insertEvents(run, rows);

    const std::vector<SampleEvent> listed = store.eventsWithout<SampleEvent>(run, {"png", "ms", "t"});
    ASSERT_EQ(listed.size(), 4u);
    EXPECT_EQ(listed[3].step, 10);
    EXPECT_EQ(listed[3].index, 1);
    EXPECT_EQ(listed[3].seed, 43);
    EXPECT_EQ(listed[3].width, 64);
    EXPECT_EQ(listed[3].prompt, "a fox");
    EXPECT_TRUE(listed[3].png.empty());
    EXPECT_TRUE(std::isnan(listed[3].t));
    // After a key, as events() reads.
    EXPECT_EQ(store.eventsWithout<SampleEvent>(run, {"png"}, 0).size(), 2u);
    EXPECT_EQ(store.eventsWithout<SampleEvent>(run, {"png"}, 0)[0].ms, 12);
    // The whole rows are still there.
    EXPECT_EQ(store.eventsBetween<SampleEvent>(run, int64_t(10), int64_t(11))[0].png.size(), 100000u);
    // Only fields that are no key can be left out.
    EXPECT_THROW(store.eventsWithout<SampleEvent>(run, {"step"}), std::logic_error);
    EXPECT_THROW(store.eventsWithout<SampleEvent>(run, {"pixels"}), std::logic_error);
}

TEST(EventTables, EventsOfMixedKindsGoInOneCall) {
    TempDir dir;
    RunStore store(dir.file("parallax.db"));
    const int64_t run = newRun(store, "mixed");
    store.insertEvents(run, std::vector<TelemetryEvent>{rankStep(0, 3, 1, 2), rankStep(1, 3, 3, 4)});
    EXPECT_EQ(store.events<RankStepEvent>(run).size(), 2u);
    EXPECT_THROW(store.insertEvents(run, std::vector<TelemetryEvent>{StepEvent{}}), std::logic_error);
}

TEST(EventTables, AStoreLackingATableOrAColumnGetsThemWhenOpened) {
    TempDir dir;
    const std::string path = dir.file("parallax.db");
    int64_t run = 0;
    {
        RunStore store(path);
        run = newRun(store, "older");
    }
    {
        // As a store whose event had no wait_ms yet: the table without that column, one old row.
        RawDb db(path);
        db.exec("DROP TABLE rank_steps");
        db.exec("CREATE TABLE rank_steps (run INTEGER NOT NULL, step INTEGER NOT NULL, rank INTEGER NOT NULL,"
                " compute_ms REAL, t REAL, PRIMARY KEY (run, step, rank)) WITHOUT ROWID");
        db.exec("INSERT INTO rank_steps (run, step, rank, compute_ms, t) VALUES (" + std::to_string(run) +
                ", 0, 0, 12.5, 5)");
        EXPECT_EQ(columns(db, "rank_steps").count("wait_ms"), 0u);
    }
    {
        RunStore store(path);
        RawDb db(path);
        EXPECT_EQ(columns(db, "rank_steps").count("wait_ms"), 1u);
        store.insertEvents(run, std::vector<RankStepEvent>{rankStep(0, 1, 40, 60)});
        const std::vector<RankStepEvent> rows = store.events<RankStepEvent>(run);
        ASSERT_EQ(rows.size(), 2u);
        EXPECT_EQ(rows[0].compute_ms, 12.5);
        EXPECT_TRUE(std::isnan(rows[0].wait_ms)); // the old row has none
        EXPECT_EQ(rows[1].wait_ms, 60);
    }
    {
        RawDb(path).exec("DROP TABLE rank_steps");
        RunStore store(path);
        store.insertEvents(run, std::vector<RankStepEvent>{rankStep(2, 7, 1, 1)});
        ASSERT_EQ(store.events<RankStepEvent>(run).size(), 1u);
        EXPECT_EQ(store.events<RankStepEvent>(run)[0].rank, 2);
    }
}

TEST(EventTables, TheWriterBatchesThemWithTheOtherRows) {
    TempDir dir;
    RunStore store(dir.file("parallax.db"));
    const int64_t run = newRun(store, "batched");
    BatchedWriter writer(store, run, std::chrono::hours(1), 1000);
    writer.add(rankStep(0, 0, 10, 5));
    writer.add(TelemetryEvent{rankStep(1, 0, 12, 3)});
    EXPECT_EQ(writer.pendingRows(), 2u);
    EXPECT_TRUE(store.events<RankStepEvent>(run).empty());
    writer.flush();
    EXPECT_EQ(writer.pendingRows(), 0u);
    const std::vector<RankStepEvent> rows = store.events<RankStepEvent>(run);
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[1].compute_ms, 12);
}

struct ListKeyEvent {
    std::vector<std::string> names;
    static constexpr std::string_view kName = "list_key";
    static const std::vector<EventField<ListKeyEvent>>& fields() {
        static const std::vector<EventField<ListKeyEvent>> f = {eventField("names", &ListKeyEvent::names)};
        return f;
    }
    static EventTable table() { return {"list_keys", {"names"}, /*listsAsJson=*/true}; }
};

TEST(EventTables, ListsAreKeptAsJsonTextWhereTheTableSaysSoButAreNoKey) {
    const EventTableSpec& comms = eventTableSpec<CommEvent>();
    for (const EventTableSpec::Column& c : comms.columns) {
        if (c.name == "groups" || c.name == "enqueued") {
            EXPECT_STREQ(c.type, "TEXT") << c.name;
        }
    }
    try {
        eventTableSpec<ListKeyEvent>();
        FAIL() << "a list key was accepted";
    } catch (const std::logic_error& e) {
        EXPECT_NE(std::string(e.what()).find("\"names\" is a list"), std::string::npos) << e.what();
    }

    TempDir dir;
    const std::string path = dir.file("parallax.db");
    RunStore store(path);
    const int64_t run = newRun(store, "comms");
    CommEvent c;
    c.rank = 1;
    c.collectives = 12;
    c.groups = {"world", "dp \"quoted\"", "tp\xff"}; // not UTF-8: kept as U+FFFD
    c.enqueued = {7, int64_t{1} << 40, -1};
    c.completed = {6, 5};
    c.pending_op = "all_reduce";
    c.pending_group = "dp";
    c.pending_seq = 7;
    c.pending_bytes = 4096;
    c.pending_s = 12.5;
    c.t = 100.25;
    store.insertComm(run, c);
    const std::vector<CommEvent> rows = store.comms(run);
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0].groups, (std::vector<std::string>{"world", "dp \"quoted\"", "tp\xef\xbf\xbd"}));
    EXPECT_EQ(rows[0].enqueued, c.enqueued);
    EXPECT_EQ(rows[0].completed, c.completed);
    EXPECT_EQ(rows[0].pending_op, "all_reduce");
    EXPECT_EQ(rows[0].pending_group, "dp");
    EXPECT_EQ(rows[0].pending_seq, 7);
    EXPECT_EQ(rows[0].pending_bytes, 4096);
    EXPECT_EQ(rows[0].pending_s, 12.5);
    EXPECT_EQ(RawDb(path).text("SELECT completed FROM comms"), "[6,5]");
}

TEST(EventTables, BatchesGoInStatementsOfManyRowsAndTheLastOfAKeyStays) {
    TempDir dir;
    RunStore store(dir.file("parallax.db"));
    const int64_t run = newRun(store, "devices");
    std::vector<DeviceEvent> rows;
    for (int i = 0; i < 40; ++i) {
        DeviceEvent d;
        d.rank = i % 4;
        d.device = d.rank;
        d.t = 10.0 + i / 4;
        d.util = i;
        rows.push_back(d);
    }
    rows[33].util = -5;
    rows.push_back(rows[33]); // the same key again, in the same batch
    rows.back().util = 55;
    DeviceEvent noTime; // a NaN time is kept as 0: a key cannot be NULL
    noTime.t = std::numeric_limits<double>::quiet_NaN();
    noTime.util = 1;
    rows.push_back(noTime);
    store.insertDeviceSamples(run, rows);
    const std::vector<DeviceEvent> got = store.deviceSamples(run);
    ASSERT_EQ(got.size(), 41u);
    EXPECT_EQ(got[0].t, 0.0);
    EXPECT_EQ(got[0].util, 1);
    for (size_t i = 1; i < got.size(); ++i) {
        EXPECT_EQ(got[i].t, rows[i - 1].t) << i;
        EXPECT_EQ(got[i].rank, rows[i - 1].rank) << i;
        EXPECT_EQ(got[i].util, i - 1 == 33 ? 55 : rows[i - 1].util) << i;
    }
    EXPECT_EQ(store.deviceSamples(run, 18.5).size(), 4u); // t 19
}

TEST(EventTables, ACheckpointIsOneRowPerStepAndPath) {
    TempDir dir;
    RunStore store(dir.file("parallax.db"));
    const int64_t run = newRun(store, "checkpoints");
    CheckpointEvent k;
    k.step = 10;
    k.path = "/runs/1/checkpoints/step-10";
    k.bytes = 100;
    store.insertCheckpoint(run, k);
    k.bytes = 200; // written again: the later record stays
    store.insertCheckpoint(run, k);
    k.path = "/elsewhere/step-10";
    store.insertCheckpoint(run, k);
    k.step = 5;
    store.insertCheckpoint(run, k);
    const std::vector<CheckpointEvent> got = store.checkpoints(run);
    ASSERT_EQ(got.size(), 3u);
    EXPECT_EQ(got[0].step, 5);
    EXPECT_EQ(got[1].path, "/elsewhere/step-10");
    EXPECT_EQ(got[2].path, "/runs/1/checkpoints/step-10");
    EXPECT_EQ(got[2].bytes, 200);
}

} // namespace
} // namespace parallax
