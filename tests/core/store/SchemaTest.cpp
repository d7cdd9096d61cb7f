#include "core/store/RunStore.h"
#include "core/store/Schema.h"
#include "tests/core/store/RawDb.h"
#include "tests/core/store/TempDir.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace parallax {
namespace {

using test::RawDb;
using test::TempDir;

std::string errorOf(const std::string& path) {
    try {
        RunStore store(path);
    } catch (const StoreError& e) {
        return e.what();
    }
    return {};
}

std::string fileContents(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

TEST(Schema, LastMigrationIsTheBuildsSchemaVersion) {
    ASSERT_FALSE(storeMigrations().empty());
    int previous = 0;
    for (const auto& m : storeMigrations()) {
        EXPECT_GT(m.version, previous) << m.description;
        previous = m.version;
    }
    EXPECT_EQ(storeMigrations().back().version, RunStore::kSchemaVersion);
}

TEST(Schema, NewStoreHasEveryTableInWalMode) {
    TempDir dir;
    const std::string path = dir.file("nested/folder/parallax.db");
    {
        RunStore store(path);
        EXPECT_EQ(store.schemaVersion(), RunStore::kSchemaVersion);
        EXPECT_EQ(store.path(), path);
    }
    ASSERT_TRUE(std::filesystem::exists(path));
    RawDb raw(path);
    EXPECT_EQ(raw.text("PRAGMA journal_mode"), "wal");
    EXPECT_EQ(raw.integer("PRAGMA user_version"), RunStore::kSchemaVersion);
    EXPECT_EQ(raw.integer("PRAGMA application_id"), kStoreApplicationId);
    for (const char* table : {"runs", "metrics", "metric_chunks", "device_samples", "spans",
                              "span_chunks", "comms", "checkpoints", "logs"}) {
        EXPECT_EQ(raw.integer(std::string("SELECT count(*) FROM sqlite_master WHERE name = '") +
                              table + "'"),
                  1)
            << table;
    }
    // The full-text index of log lines lives in a file of its own, created when first needed.
    EXPECT_EQ(raw.integer("SELECT count(*) FROM sqlite_master WHERE name LIKE 'logs_fts%'"), 0);
    EXPECT_FALSE(std::filesystem::exists(path + ".logindex"));
}

TEST(Schema, ReopeningKeepsDataAndVersion) {
    TempDir dir;
    const std::string path = dir.file("s.db");
    int64_t id = 0;
    {
        RunStore store(path);
        NewRun r;
        r.name = "keep";
        id = store.createRun(r);
    }
    RunStore again(path);
    EXPECT_EQ(again.schemaVersion(), RunStore::kSchemaVersion);
    ASSERT_TRUE(again.run(id));
    EXPECT_EQ(again.run(id)->name, "keep");
}

TEST(Schema, EmptyVersionZeroDatabaseIsMigrated) {
    TempDir dir;
    const std::string path = dir.file("v0.db");
    {
        RawDb raw(path); // a SQLite file with no schema: user_version 0
        EXPECT_EQ(raw.integer("PRAGMA user_version"), 0);
        raw.exec("PRAGMA user_version = 0");
    }
    RunStore store(path);
    EXPECT_EQ(store.schemaVersion(), RunStore::kSchemaVersion);
    NewRun r;
    r.name = "after-migration";
    const int64_t id = store.createRun(r);
    EXPECT_EQ(store.run(id)->name, "after-migration");
}

TEST(Schema, VersionOneStoreKeepsItsMetricsAfterTheUpgrade) {
    TempDir dir;
    const std::string path = dir.file("v1.db");
    {
        // A store as schema 1 wrote it: one row per step in `metrics`.
        RawDb raw(path);
        applyMigrations(raw.handle(), path, {storeMigrations().front()});
        EXPECT_EQ(raw.integer("PRAGMA user_version"), 1);
        raw.exec("INSERT INTO runs (id, name, state, created_at) VALUES (1, 'old', 'succeeded', 1.0)");
        raw.exec("INSERT INTO metrics (run, step, t, loss, lr, grad_norm, tokens_per_s, samples_per_s, step_ms, "
                 "step_ms_min, step_ms_max, slowest_rank, mfu, tokens, peak_mem) VALUES "
                 "(1, 0, 10.0, 2.5, 0.001, 1.0, 100.0, 4.0, 50.0, 49.0, 51.0, 1, 0.1, 1024, 1e9), "
                 "(1, 1, 11.0, 2.4, 0.001, 0.9, 101.0, 4.0, 50.0, 49.0, 51.0, 0, 0.1, 2048, 1e9)");
    }
    RunStore store(path);
    EXPECT_EQ(store.schemaVersion(), RunStore::kSchemaVersion);
    // Steps written after the upgrade go to chunks; both read back as one series.
    StepEvent later;
    later.step = 2;
    later.loss = 2.3;
    store.insertMetric(1, later);
    const auto steps = store.metrics(1);
    ASSERT_EQ(steps.size(), 3u);
    EXPECT_EQ(steps[0].loss, 2.5);
    EXPECT_EQ(steps[1].tokens, 2048);
    EXPECT_EQ(steps[2].loss, 2.3);
    EXPECT_EQ(store.metrics(1, 0).size(), 2u);
}

TEST(Schema, VersionTwoStoreKeepsItsSpansAfterTheUpgrade) {
    TempDir dir;
    const std::string path = dir.file("v2.db");
    {
        // A store as schema 2 wrote it: one row per span in `spans`.
        RawDb raw(path);
        const auto& all = storeMigrations();
        applyMigrations(raw.handle(), path, {all[0], all[1]});
        EXPECT_EQ(raw.integer("PRAGMA user_version"), 2);
        raw.exec("INSERT INTO runs (id, name, state, created_at) VALUES (1, 'old', 'succeeded', 1.0)");
        raw.exec("INSERT INTO spans (run, step, rank, start, stage, microbatch, kind, end_t) VALUES "
                 "(1, 5, 0, 10.0, 0, 0, 'F', 10.5), (1, 5, 1, 10.2, 1, 0, 'F', 10.6), "
                 "(1, 7, 0, 20.0, 0, 0, 'B', 20.5)");
    }
    RunStore store(path);
    EXPECT_EQ(store.schemaVersion(), RunStore::kSchemaVersion);
    SpanEvent later;
    later.rank = 0;
    later.step = 5;
    later.microbatch = 1;
    later.kind = "F";
    later.start = 10.3;
    later.end = 10.4;
    store.insertSpan(1, later);
    later.step = 9;
    store.insertSpan(1, later);
    EXPECT_EQ(store.spanSteps(1), (std::vector<int64_t>{5, 7, 9}));
    const auto five = store.spans(1, 5);
    ASSERT_EQ(five.size(), 3u);
    EXPECT_EQ(five[0].start, 10.0);
    EXPECT_EQ(five[1].start, 10.3); // rank 0's later span before rank 1
    EXPECT_EQ(five[2].rank, 1);
    EXPECT_EQ(five[2].end, 10.6);
    EXPECT_EQ(store.spans(1, 7)[0].kind, "B");
}

TEST(Schema, MigrationsApplyInOrderAndAFailedStepLeavesThePreviousVersion) {
    TempDir dir;
    const std::string path = dir.file("m.db");
    RawDb raw(path);
    const std::vector<SchemaMigration> broken = {
        {1, "first table", "CREATE TABLE a (x INTEGER)"},
        {2, "second table", "CREATE TABLE b (y INTEGER); CREATE TABLE a (z INTEGER)"},
    };
    try {
        applyMigrations(raw.handle(), path, broken);
        FAIL() << "the duplicate table of step 2 must fail";
    } catch (const StoreError& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("version 2"), std::string::npos) << what;
        EXPECT_NE(what.find("second table"), std::string::npos) << what;
        EXPECT_NE(what.find(path), std::string::npos) << what;
    }
    EXPECT_EQ(raw.integer("PRAGMA user_version"), 1);
    EXPECT_EQ(raw.integer("SELECT count(*) FROM sqlite_master WHERE name = 'a'"), 1);
    EXPECT_EQ(raw.integer("SELECT count(*) FROM sqlite_master WHERE name = 'b'"), 0);

    const std::vector<SchemaMigration> fixed = {
        {1, "first table", "CREATE TABLE a (x INTEGER)"}, // already applied: skipped
        {2, "second table", "CREATE TABLE b (y INTEGER)"},
        {3, "a column", "ALTER TABLE b ADD COLUMN z TEXT"},
    };
    applyMigrations(raw.handle(), path, fixed);
    EXPECT_EQ(raw.integer("PRAGMA user_version"), 3);
    EXPECT_EQ(raw.integer("SELECT count(*) FROM pragma_table_info('b') WHERE name = 'z'"), 1);
    EXPECT_EQ(raw.integer("PRAGMA application_id"), kStoreApplicationId);
}

TEST(Schema, NewerSchemaIsRefusedWithTheFix) {
    TempDir dir;
    const std::string path = dir.file("new.db");
    { RunStore store(path); }
    {
        RawDb raw(path);
        raw.exec("PRAGMA user_version = 99");
    }
    const std::string what = errorOf(path);
    EXPECT_NE(what.find(path), std::string::npos) << what;
    EXPECT_NE(what.find("newer Parallax (schema 99, this build reads up to " +
                        std::to_string(RunStore::kSchemaVersion) + ")"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("--store"), std::string::npos) << what;
    RawDb raw(path);
    EXPECT_EQ(raw.integer("PRAGMA user_version"), 99); // left as it was
}

TEST(Schema, FileThatIsNotADatabaseIsRefusedAndLeftAlone) {
    TempDir dir;
    const std::string path = dir.file("notes.txt");
    std::string text;
    for (int i = 0; i < 100; ++i) text += "this is a text file, not a database\n";
    std::ofstream(path) << text;
    const std::string what = errorOf(path);
    EXPECT_NE(what.find(path), std::string::npos) << what;
    EXPECT_NE(what.find("not a Parallax store"), std::string::npos) << what;
    EXPECT_EQ(fileContents(path), text);
    EXPECT_FALSE(std::filesystem::exists(path + "-wal"));
}

TEST(Schema, SqliteDatabaseOfAnotherProgramIsRefused) {
    TempDir dir;
    const std::string path = dir.file("other.db");
    {
        RawDb raw(path);
        raw.exec("CREATE TABLE contacts (name TEXT)");
    }
    const std::string what = errorOf(path);
    EXPECT_NE(what.find(path), std::string::npos) << what;
    EXPECT_NE(what.find("not a Parallax store"), std::string::npos) << what;
    RawDb raw(path);
    EXPECT_EQ(raw.integer("SELECT count(*) FROM sqlite_master"), 1);
    EXPECT_EQ(raw.integer("PRAGMA user_version"), 0);
}

TEST(Schema, FolderAsStorePathIsRefused) {
    TempDir dir;
    const std::string what = errorOf(dir.path());
    EXPECT_NE(what.find("is a folder"), std::string::npos) << what;
    EXPECT_NE(errorOf("").find("empty"), std::string::npos);
}

TEST(Schema, DefaultPathFollowsXdgDataHome) {
    const char* old = std::getenv("XDG_DATA_HOME");
    const std::string saved = old ? old : "";
    setenv("XDG_DATA_HOME", "/srv/data", 1);
    EXPECT_EQ(RunStore::defaultPath(), "/srv/data/parallax/parallax.db");
    unsetenv("XDG_DATA_HOME");
    const std::string fallback = RunStore::defaultPath();
    EXPECT_NE(fallback.find("/.local/share/parallax/parallax.db"), std::string::npos) << fallback;
    if (old) setenv("XDG_DATA_HOME", saved.c_str(), 1);
}


// Schema 5: each store has an identity of its own (two stores made side by side, or one made again
// at the same path, differ), runs of earlier versions have no output offset, new runs start at 0.
TEST(Schema, VersionFourStoreGetsAnIdentityAndOutputOffsets) {
    TempDir dir;
    const std::string path = dir.file("v4.db");
    {
        RawDb raw(path);
        const auto& all = storeMigrations();
        applyMigrations(raw.handle(), path, {all[0], all[1], all[2], all[3]});
        EXPECT_EQ(raw.integer("PRAGMA user_version"), 4);
        raw.exec("INSERT INTO runs (id, name, state, created_at) VALUES (1, 'old', 'succeeded', 1.0)");
    }
    std::string first;
    {
        RunStore store(path);
        EXPECT_EQ(store.schemaVersion(), RunStore::kSchemaVersion);
        first = store.storeId();
        EXPECT_EQ(first.size(), 32u);
        EXPECT_EQ(first.find_first_not_of("0123456789abcdef"), std::string::npos) << first;
        EXPECT_FALSE(store.outputOffset(1).has_value());
        NewRun r;
        r.name = "new";
        const int64_t id = store.createRun(r);
        EXPECT_EQ(store.outputOffset(id), 0);
        store.setOutputOffset(id, 1234);
        EXPECT_EQ(store.outputOffset(id), 1234);
        EXPECT_FALSE(store.storeInfo("nothing").has_value());
        store.setStoreInfo("layout", "x");
        EXPECT_EQ(store.storeInfo("layout"), "x");
    }
    EXPECT_EQ(RunStore(path).storeId(), first); // kept across opens
    EXPECT_NE(RunStore(dir.file("other.db")).storeId(), first);
    for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path + suffix).c_str());
    EXPECT_NE(RunStore(path).storeId(), first); // made again: another store
}

} // namespace
// Schema 9: an alert names its ranks and the step it was found at; one of schema 8 keeps its
// message and has neither.
TEST(Schema, VersionEightAlertsKeepTheirMessageAndNewOnesNameRanksAndStep) {
    TempDir dir;
    const std::string path = dir.file("v8.db");
    {
        RawDb raw(path);
        const auto& all = storeMigrations();
        applyMigrations(raw.handle(), path, {all.begin(), all.begin() + 8});
        EXPECT_EQ(raw.integer("PRAGMA user_version"), 8);
        raw.exec("INSERT INTO runs (id, name, state, created_at) VALUES (1, 'old', 'running', 1.0)");
        raw.exec("INSERT INTO alerts (run, kind, message, since, t, active) VALUES "
                 "(1, 'straggler', 'rank 1: compute 2.00x', 1.0, 2.0, 1)");
    }
    RunStore store(path);
    EXPECT_EQ(store.schemaVersion(), RunStore::kSchemaVersion);
    std::vector<RunAlert> alerts = store.alerts(1);
    ASSERT_EQ(alerts.size(), 1u);
    EXPECT_EQ(alerts[0].message, "rank 1: compute 2.00x");
    EXPECT_TRUE(alerts[0].ranks.empty());
    EXPECT_EQ(alerts[0].step, -1);
    RunAlert a;
    a.kind = AlertKind::Hang;
    a.message = "pipeline stage 1 (rank 2, rank 3) is silent";
    a.ranks = {2, 3};
    a.step = 812;
    store.setAlert(1, a);
    alerts = store.alerts(1);
    ASSERT_EQ(alerts.size(), 2u);
    EXPECT_EQ(alerts[0].kind, AlertKind::Hang);
    EXPECT_EQ(alerts[0].ranks, (std::vector<int>{2, 3}));
    EXPECT_EQ(alerts[0].step, 812);
    a.ranks = {3};
    a.step = 815;
    store.setAlert(1, a); // said again while it lasts: it was found at step 812
    EXPECT_EQ(store.alerts(1)[0].ranks, std::vector<int>{3});
    EXPECT_EQ(store.alerts(1)[0].step, 812);
    a.active = false;
    store.setAlert(1, a);
    a.active = true;
    a.step = 900;
    store.setAlert(1, a); // ended, then found again
    EXPECT_EQ(store.alerts(1)[0].step, 900);
}

} // namespace parallax
