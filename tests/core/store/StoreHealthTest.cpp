// A store whose file is damaged, truncated, empty or readable by others: named at once, with the
// way to recover; never retried as if it were busy.
#include "core/store/BatchedWriter.h"
#include "core/store/RunStore.h"
#include "tests/core/store/TempDir.h"
#include "tests/support/StoreDamage.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

namespace parallax {
namespace {

using test::TempDir;
namespace fs = std::filesystem;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A store with one run and some rows in each table, closed.
void makeStore(const std::string& path) {
    RunStore store(path);
    NewRun r;
    r.name = "healthy";
    const int64_t id = store.createRun(r);
    BatchedWriter w(store, id);
    for (int i = 0; i < 200; ++i) {
        StepEvent s;
        s.step = i;
        s.loss = 1.0 / (i + 1);
        w.add(s);
        LogRow line;
        line.rank = i % 2;
        line.message = "line " + std::to_string(i);
        w.add(line);
    }
    w.flush();
}

TEST(StoreHealth, ASoundStorePassesItsCheck) {
    TempDir dir;
    const std::string path = dir.file("parallax.db");
    makeStore(path);
    RunStore store(path);
    EXPECT_NO_THROW(store.requireIntact());
}

TEST(StoreHealth, GarbagePagesAreFoundByTheCheckWhichNamesTheStoreAndTheWayBack) {
    TempDir dir;
    const std::string path = dir.file("parallax.db");
    makeStore(path);
    ASSERT_GE(test::garbleStorePages(path), 8192);
    RunStore store(path); // opens: its header and schema page are intact
    try {
        store.requireIntact();
        FAIL() << "the damaged store passed its check";
    } catch (const StoreDamaged& e) {
        const std::string said = e.what();
        EXPECT_TRUE(contains(said, path)) << said;
        EXPECT_TRUE(contains(said, "damaged")) << said;
        EXPECT_TRUE(contains(said, "import " + path + ".runs")) << said;
    }
}

// A write into a damaged page fails as damage at once, not as a store that is busy for a while.
TEST(StoreHealth, AWriteIntoDamagedPagesFailsAtOnceAsDamage) {
    TempDir dir;
    const std::string path = dir.file("parallax.db");
    makeStore(path);
    RunStore store(path);
    const int64_t run = store.listRuns().at(0).id;
    test::garbleStorePages(path);
    test::touchStore(path);
    BatchedWriter w(store, run);
    for (int i = 0; i < 50; ++i) {
        LogRow line;
        line.message = "after the damage " + std::to_string(i);
        w.add(line);
    }
    const auto start = std::chrono::steady_clock::now();
    EXPECT_THROW(w.flush(), StoreDamaged);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(StoreHealth, AHalfTruncatedStoreIsCalledDamagedWithTheWayBack) {
    TempDir dir;
    const std::string path = dir.file("parallax.db");
    makeStore(path);
    {
        RunStore checkpointed(path); // closing the last connection moves the WAL into the file
    }
    std::error_code ec;
    fs::remove(path + "-wal", ec);
    fs::remove(path + "-shm", ec);
    fs::resize_file(path, fs::file_size(path) / 2);
    try {
        RunStore store(path);
        store.requireIntact();
        FAIL() << "a store cut in half opened and passed its check";
    } catch (const StoreDamaged& e) {
        EXPECT_TRUE(contains(e.what(), "import")) << e.what();
        EXPECT_FALSE(contains(e.what(), "not a SQLite database")) << e.what();
    }
}

TEST(StoreHealth, AnEmptyFileIsNotMadeAStore) {
    TempDir dir;
    const std::string path = dir.file("notes.txt");
    std::ofstream(path).close();
    try {
        RunStore store(path);
        FAIL() << "an empty file became a store";
    } catch (const StoreError& e) {
        EXPECT_TRUE(contains(e.what(), "empty file")) << e.what();
    }
    EXPECT_EQ(fs::file_size(path), 0u);
}

TEST(StoreHealth, AStoreReadableByOthersIsMadeTheOwnersAlone) {
    TempDir dir;
    const std::string path = dir.file("parallax.db");
    makeStore(path);
    ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
    RunStore store(path);
    struct stat st {};
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
}

} // namespace
} // namespace parallax
