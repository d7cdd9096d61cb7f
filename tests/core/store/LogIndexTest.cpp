#include "core/store/BatchedWriter.h"
#include "core/store/RunStore.h"
#include "core/store/Schema.h"
#include "tests/core/store/RawDb.h"
#include "tests/core/store/ErrorOf.h"
#include "tests/core/store/TempDir.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <thread>

namespace parallax {
namespace {

using namespace std::chrono_literals;
using test::RawDb;
using test::TempDir;

LogRow line(const std::string& message, int rank = 0) {
    LogRow r;
    r.t = 1.0;
    r.rank = rank;
    r.host = "node0";
    r.level = LogLevel::Info;
    r.stream = "stdout";
    r.message = message;
    return r;
}

int64_t newRun(RunStore& store, const std::string& name = "logs") {
    NewRun r;
    r.name = name;
    return store.createRun(r);
}

int64_t matches(const RunStore& store, int64_t run, const std::string& text) {
    LogQuery q;
    q.match = text;
    const int64_t n = store.logCount(run, q);
    EXPECT_EQ(static_cast<int64_t>(store.logs(run, q).size()), n) << text;
    return n;
}

void removeIndexFiles(const std::string& index) {
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(index + suffix);
}

class LogIndexTest : public ::testing::Test {
protected:
    TempDir dir;
    std::string path = dir.file("parallax.db");
    RunStore store{path};
    int64_t run = newRun(store);
};

TEST_F(LogIndexTest, IndexIsAFileBesideTheStoreCreatedWhenFirstNeeded) {
    EXPECT_EQ(store.logIndexPath(), path + ".logindex");
    store.insertLog(run, line("first line"));
    EXPECT_FALSE(std::filesystem::exists(store.logIndexPath())); // writing lines does not index
    EXPECT_EQ(matches(store, run, "first"), 1);
    ASSERT_TRUE(std::filesystem::exists(store.logIndexPath()));
    RawDb index(store.logIndexPath());
    EXPECT_EQ(index.text("PRAGMA journal_mode"), "wal");
    EXPECT_EQ(index.integer("PRAGMA user_version"), 1);
    EXPECT_EQ(index.integer("SELECT through_id FROM indexed WHERE run = " + std::to_string(run)),
              store.logs(run).back().id);
}

TEST_F(LogIndexTest, LinesFromBatchedWriterAreIndexedInTheBackground) {
    constexpr int kLines = 2500;
    {
        BatchedWriter w(store, run, 1h, 100); // 25 flushes, each waking the indexer
        for (int i = 0; i < kLines; ++i) {
            w.add(line("step " + std::to_string(i) + (i % 10 == 0 ? " wombat" : " numbat"), i % 4));
        }
        w.flush();
        w.waitIndexed();
        // Indexed without any search: the index holds every line already.
        RawDb index(store.logIndexPath());
        EXPECT_EQ(index.integer("SELECT through_id FROM indexed WHERE run = " + std::to_string(run)),
                  store.logs(run).back().id);
        EXPECT_EQ(index.integer("SELECT count(*) FROM logs_fts WHERE logs_fts MATCH 'wombat'"),
                  kLines / 10);
        index.exec("INSERT INTO logs_fts(logs_fts) VALUES ('integrity-check')");
    }
    RunStore reader(path);
    EXPECT_EQ(matches(reader, run, "wombat"), kLines / 10);
    EXPECT_EQ(matches(reader, run, "numbat"), kLines - kLines / 10);
    EXPECT_EQ(matches(reader, run, "\"step 2499 numbat\""), 1);
}

TEST_F(LogIndexTest, TheWritersDestructorLeavesTheIndexCaughtUp) {
    {
        BatchedWriter w(store, run, 1h, 1000000);
        for (int i = 0; i < 300; ++i) w.add(line("closing line " + std::to_string(i)));
    } // flushes, indexes, joins its thread
    RawDb index(store.logIndexPath());
    EXPECT_EQ(index.integer("SELECT through_id FROM indexed WHERE run = " + std::to_string(run)),
              store.logs(run).back().id);
    EXPECT_EQ(index.integer("SELECT count(*) FROM logs_fts WHERE logs_fts MATCH 'closing'"), 300);
}

TEST_F(LogIndexTest, ASearchFindsEveryCommittedLineAtOnce) {
    RunStore reader(path);
    // Without the background indexer: rows written directly.
    store.insertLogs(run, {line("alpha one"), line("alpha two"), line("beta")});
    EXPECT_EQ(matches(reader, run, "alpha"), 2);
    store.insertLog(run, line("alpha three"));
    EXPECT_EQ(matches(reader, run, "alpha"), 3);
    // Through a writer, searched right after its flush, before the indexer can have run.
    BatchedWriter w(store, run, 1h, 1000);
    for (int i = 0; i < 500; ++i) w.add(line("gamma " + std::to_string(i)));
    w.flush();
    EXPECT_EQ(matches(reader, run, "gamma"), 500);
    EXPECT_EQ(matches(reader, run, "alpha"), 3);
}

TEST_F(LogIndexTest, TwoIndexersNeverIndexALineTwice) {
    std::vector<LogRow> rows;
    for (int i = 0; i < 20000; ++i) rows.push_back(line("twice " + std::to_string(i)));
    store.insertLogs(run, rows);
    auto index = [&] {
        RunStore mine(path);
        while (!mine.indexLogs(run, 1000)) {
        }
    };
    std::thread a(index), b(index);
    a.join();
    b.join();
    RawDb raw(store.logIndexPath());
    // A line indexed twice would match twice.
    EXPECT_EQ(raw.integer("SELECT count(*) FROM logs_fts WHERE logs_fts MATCH 'twice'"), 20000);
    raw.exec("INSERT INTO logs_fts(logs_fts) VALUES ('integrity-check')");
    EXPECT_EQ(matches(store, run, "twice"), 20000);
}

TEST_F(LogIndexTest, IndexingNeverHoldsTheStoresWriteLock) {
    store.insertLogs(run, {line("before the lock")});
    {
        // A writer in another process holds the store's write lock: indexing and searching only
        // read the store.
        RawDb writer(path);
        writer.exec("BEGIN IMMEDIATE");
        writer.exec("INSERT INTO logs (run, rank, level, message) VALUES (" + std::to_string(run) +
                    ", 0, 1, 'uncommitted line')");
        RunStore reader(path);
        reader.setBusyTimeout(50);
        EXPECT_TRUE(reader.indexLogs(run));
        EXPECT_EQ(matches(reader, run, "before"), 1);
        EXPECT_EQ(matches(reader, run, "uncommitted"), 0);
        writer.exec("COMMIT");
        EXPECT_EQ(matches(reader, run, "uncommitted"), 1);
    }
    {
        // An indexer holds the index's write lock: the rows' writer does not wait for it.
        RawDb indexer(store.logIndexPath());
        indexer.exec("BEGIN IMMEDIATE");
        store.setBusyTimeout(50);
        BatchedWriter w(store, run, 1h, 1000);
        for (int i = 0; i < 100; ++i) w.add(line("while indexing"));
        w.flush();
        EXPECT_EQ(store.logCount(run), 102);
        indexer.exec("ROLLBACK");
        store.setBusyTimeout(15000);
    }
    EXPECT_EQ(matches(store, run, "indexing"), 100);
}

TEST_F(LogIndexTest, ADeletedRunsWordsDoNotMatchANewRunThatReusesItsIds) {
    const int64_t keep = newRun(store, "keep");
    store.insertLogs(keep, {line("kept platypus")});
    std::vector<LogRow> old;
    for (int i = 0; i < 50; ++i) old.push_back(line("echidna " + std::to_string(i)));
    store.insertLogs(run, old);
    const std::vector<LogRow> oldRows = store.logs(run);
    EXPECT_EQ(matches(store, run, "echidna"), 50);
    store.deleteRun(run);

    // The deleted lines had the highest ids: the new run's lines get the same ids.
    const int64_t next = newRun(store, "next");
    std::vector<LogRow> fresh;
    for (int i = 0; i < 50; ++i) fresh.push_back(line("wallaby " + std::to_string(i)));
    store.insertLogs(next, fresh);
    const std::vector<LogRow> newRows = store.logs(next);
    ASSERT_EQ(newRows.size(), 50u);
    EXPECT_EQ(newRows.front().id, oldRows.front().id);
    EXPECT_EQ(matches(store, next, "echidna"), 0);
    EXPECT_EQ(matches(store, next, "wallaby"), 50);
    EXPECT_EQ(matches(store, next, "\"wallaby 7\""), 1);
    EXPECT_EQ(matches(store, keep, "platypus"), 1);
    RawDb index(store.logIndexPath());
    EXPECT_EQ(index.integer("SELECT count(*) FROM logs_fts WHERE logs_fts MATCH 'echidna'"), 0);
    index.exec("INSERT INTO logs_fts(logs_fts) VALUES ('integrity-check')");
}

TEST_F(LogIndexTest, IntegrityHoldsAfterInsertsAndDeletes) {
    std::vector<int64_t> runs = {run};
    for (int i = 0; i < 4; ++i) runs.push_back(newRun(store, "r" + std::to_string(i)));
    for (int round = 0; round < 3; ++round) {
        for (int64_t r : runs) {
            std::vector<LogRow> rows;
            for (int i = 0; i < 300; ++i) {
                rows.push_back(line("round " + std::to_string(round) + " run" + std::to_string(r) +
                                    " line " + std::to_string(i)));
            }
            store.insertLogs(r, rows);
        }
        store.indexLogs();
    }
    store.deleteRun(runs[1]);
    store.deleteRun(runs[3]);
    // Lines written after the last indexing, of a run deleted before any search.
    const int64_t late = newRun(store, "late");
    store.insertLogs(late, {line("late line")});
    store.deleteRun(late);
    EXPECT_EQ(matches(store, runs[0], "run" + std::to_string(runs[0])), 900);
    EXPECT_EQ(matches(store, runs[2], "round"), 900);
    RawDb index(store.logIndexPath());
    index.exec("INSERT INTO logs_fts(logs_fts) VALUES ('integrity-check')");
    EXPECT_EQ(index.integer("SELECT count(*) FROM logs_fts WHERE logs_fts MATCH 'round'"), 3 * 900);
    EXPECT_EQ(index.integer("SELECT count(*) FROM indexed"), 3);
}

TEST(LogIndex, DeletingTheIndexFileLosesNothing) {
    TempDir dir;
    const std::string path = dir.file("parallax.db");
    const std::string index = path + ".logindex";
    int64_t run = 0;
    {
        RunStore store(path);
        run = newRun(store);
        store.insertLogs(run, {line("quokka one"), line("quokka two"), line("other")});
        EXPECT_EQ(matches(store, run, "quokka"), 2);
    }
    ASSERT_TRUE(std::filesystem::exists(index));
    removeIndexFiles(index);
    RunStore store(path);
    EXPECT_EQ(matches(store, run, "quokka"), 2);
    EXPECT_EQ(matches(store, run, "\"quokka two\""), 1);
    EXPECT_TRUE(std::filesystem::exists(index));
}

TEST_F(LogIndexTest, AnIndexThatKnowsLinesTheStoreLacksStartsAfresh) {
    // As when the store is replaced by an older copy while the index file stays: its entries
    // would make new lines with the same ids match old words.
    store.insertLogs(run, {line("koala one"), line("koala two"), line("koala three")});
    EXPECT_EQ(matches(store, run, "koala"), 3);
    {
        RawDb raw(path);
        raw.exec("DELETE FROM logs WHERE id > 1");
        raw.exec("INSERT INTO logs (run, rank, level, message) VALUES (" + std::to_string(run) +
                 ", 0, 1, 'dingo')");
    }
    RunStore reopened(path);
    EXPECT_EQ(matches(reopened, run, "koala"), 1);
    EXPECT_EQ(matches(reopened, run, "dingo"), 1);
    RawDb index(store.logIndexPath());
    index.exec("INSERT INTO logs_fts(logs_fts) VALUES ('integrity-check')");
}

TEST(LogIndex, DamagedFileIsAStoreErrorNamingTheFileAndTheFix) {
    TempDir dir;
    const std::string path = dir.file("parallax.db");
    RunStore store(path);
    const int64_t run = newRun(store);
    store.insertLog(run, line("some line"));
    const std::string index = store.logIndexPath();
    std::string garbage;
    for (int i = 0; i < 8192; ++i) garbage += static_cast<char>((i * 7919) % 251);
    std::ofstream(index, std::ios::binary) << garbage;

    LogQuery q;
    q.match = "some";
    const std::string what = errorOf([&] { store.logs(run, q); });
    EXPECT_NE(what.find(index), std::string::npos) << what;
    EXPECT_NE(what.find("damaged"), std::string::npos) << what;
    EXPECT_NE(what.find("delete it"), std::string::npos) << what;
    EXPECT_NE(errorOf([&] { store.indexLogs(run); }).find(index), std::string::npos);
    // Everything but text search still works.
    EXPECT_EQ(store.logs(run).size(), 1u);
    // The fix works.
    removeIndexFiles(index);
    EXPECT_EQ(store.logCount(run, q), 1);
}

TEST(LogIndex, NewerOrForeignIndexFileIsRefusedWithTheFix) {
    TempDir dir;
    const std::string path = dir.file("parallax.db");
    const std::string index = path + ".logindex";
    int64_t run = 0;
    {
        RunStore store(path);
        run = newRun(store);
        store.insertLog(run, line("some line"));
        store.indexLogs(run);
    }
    {
        RawDb raw(index);
        raw.exec("PRAGMA user_version = 7");
    }
    {
        RunStore store(path);
        const std::string what = errorOf([&] { store.indexLogs(run); });
        EXPECT_NE(what.find(index), std::string::npos) << what;
        EXPECT_NE(what.find("newer Parallax"), std::string::npos) << what;
    }
    removeIndexFiles(index);
    {
        RawDb raw(index);
        raw.exec("CREATE TABLE contacts (name TEXT)");
    }
    RunStore store(path);
    const std::string what = errorOf([&] { store.indexLogs(run); });
    EXPECT_NE(what.find(index), std::string::npos) << what;
    EXPECT_NE(what.find("not a Parallax log index"), std::string::npos) << what;
    RawDb raw(index);
    EXPECT_EQ(raw.integer("SELECT count(*) FROM sqlite_master"), 1); // left as it was
}

TEST(LogIndex, SchemaThreeStoreKeepsItsLinesSearchableAfterTheUpgrade) {
    TempDir dir;
    const std::string path = dir.file("v3.db");
    {
        // A store as schema 3 wrote it: lines in `logs`, indexed in `logs_fts` of the same file.
        RawDb raw(path);
        const auto& all = storeMigrations();
        applyMigrations(raw.handle(), path, {all[0], all[1], all[2]});
        EXPECT_EQ(raw.integer("PRAGMA user_version"), 3);
        raw.exec("INSERT INTO runs (id, name, state, created_at) VALUES (1, 'old', 'succeeded', 1.0)");
        raw.exec("INSERT INTO logs (id, run, t, rank, host, level, stream, message) VALUES "
                 "(1, 1, 1.0, 0, 'h', 1, 'stdout', 'NCCL WARN timeout waiting for peer'), "
                 "(2, 1, 2.0, 1, 'h', 3, 'stdout', 'CUDA out of memory on device 1')");
        raw.exec("INSERT INTO logs_fts (rowid, message) SELECT id, message FROM logs");
        EXPECT_EQ(raw.integer("SELECT count(*) FROM logs_fts WHERE logs_fts MATCH 'timeout'"), 1);
    }
    RunStore store(path);
    EXPECT_EQ(store.schemaVersion(), RunStore::kSchemaVersion);
    {
        RawDb raw(path);
        EXPECT_EQ(raw.integer("SELECT count(*) FROM sqlite_master WHERE name LIKE 'logs_fts%'"), 0);
        EXPECT_EQ(raw.integer("SELECT count(*) FROM sqlite_master WHERE type = 'trigger'"), 0);
        EXPECT_EQ(raw.integer("SELECT count(*) FROM logs"), 2);
    }
    EXPECT_EQ(matches(store, 1, "timeout"), 1);
    EXPECT_EQ(matches(store, 1, "\"out of memory\""), 1);
    EXPECT_EQ(matches(store, 1, "NEAR(timeout peer, 3)"), 1);
    store.insertLog(1, line("a line after the upgrade"));
    EXPECT_EQ(matches(store, 1, "upgrade"), 1);
    store.deleteRun(1);
    RawDb index(store.logIndexPath());
    EXPECT_EQ(index.integer("SELECT count(*) FROM logs_fts WHERE logs_fts MATCH 'timeout OR upgrade'"), 0);
}

TEST(LogIndex, StoreInMemoryKeepsItsIndexInMemory) {
    RunStore store(":memory:");
    EXPECT_EQ(store.logIndexPath(), "");
    const int64_t run = newRun(store);
    // The first search inside a transaction of the caller.
    store.beginTransaction();
    store.insertLog(run, line("memory first"));
    EXPECT_EQ(matches(store, run, "first"), 1);
    store.commit();
    {
        BatchedWriter w(store, run, 1h, 10);
        for (int i = 0; i < 35; ++i) w.add(line("in memory " + std::to_string(i)));
        w.flush();
        w.waitIndexed();
    }
    EXPECT_EQ(matches(store, run, "memory"), 36);
    // Inside the caller's transaction, the index joins it.
    store.beginTransaction();
    store.insertLog(run, line("memory inside"));
    EXPECT_EQ(matches(store, run, "inside"), 1);
    store.rollback();
    EXPECT_EQ(matches(store, run, "inside"), 0);
    EXPECT_EQ(matches(store, run, "memory"), 36);
    store.deleteRun(run);
    EXPECT_EQ(matches(store, run, "memory"), 0);
}

} // namespace
} // namespace parallax
