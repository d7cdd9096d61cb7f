// A run's rows into a store in a temp folder that another connection locks, or whose pages are
// damaged, while the flusher writes.
#include "core/launch/OutputRouter.h"
#include "core/launch/RawOutput.h"
#include "core/launch/PrivateFile.h"
#include "core/launch/RunNotices.h"
#include "core/launch/StoreFlusher.h"

#include "tests/core/launch/RecordedNotices.h"
#include "tests/support/Process.h"
#include "tests/support/StoreDamage.h"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <chrono>
#include <future>
#include <thread>

using namespace parallax;
using namespace std::chrono_literals;

namespace {

class Flusher : public ::testing::Test {
protected:
    Flusher() : path(dir.path() + "/parallax.db"), store(path) {
        NewRun nr;
        nr.name = "flushed";
        run = store.createRun(nr);
        runDir = dir.path() + "/run";
        ::mkdir(runDir.c_str(), 0700);
        store.setRunDir(run, runDir);
        flusher = std::make_unique<StoreFlusher>(store, run, "host1", notices);
        flusher->setRunDir(runDir);
        flusher->setDamageHandler([this](const std::string& what) { damages.push_back(what); });
        flusher->beginLive();
    }
    LogRow row(const std::string& message) { return RunNotices::row("host1", LogLevel::Info, message, 1.0); }
    int64_t rows() {
        LogQuery q;
        return RunStore(path).logCount(run, q);
    }

    parallax::testing::TempDir dir;
    std::string path;
    RunStore store;
    int64_t run = 0;
    std::string runDir;
    parallax::testing::RecordedNotices notices;
    std::vector<std::string> damages;
    std::unique_ptr<StoreFlusher> flusher;
};

// Holds the store's write lock from another connection until released.
class Locker {
public:
    explicit Locker(const std::string& path) : m_store(path) { m_store.beginTransaction(); }
    ~Locker() { release(); }
    void release() {
        if (m_held) m_store.rollback();
        m_held = false;
    }

private:
    RunStore m_store;
    bool m_held = true;
};

} // namespace

TEST_F(Flusher, RowsALockedStoreRefusesAreKeptAndWrittenOnceItTakesThem) {
    Locker lock(path);
    flusher->add(row("one"));
    flusher->add(row("two"));
    flusher->flush(true);
    EXPECT_EQ(flusher->writer().pendingRows(), 2u);
    EXPECT_TRUE(notices.said.empty()) << "said on the terminal only while it lasts";
    lock.release();
    flusher->flush(true);
    EXPECT_EQ(flusher->writer().pendingRows(), 0u);
    EXPECT_EQ(rows(), 2);
    ASSERT_EQ(notices.said.size(), 1u);
    EXPECT_EQ(notices.said[0].rfind("warn: the store refused rows for 0 s (", 0), 0u) << notices.said[0];
    EXPECT_NE(notices.said[0].find("they were kept meanwhile and are all written now"), std::string::npos);
    EXPECT_FALSE(flusher->damaged());
}

TEST_F(Flusher, LinesSpooledToOutputLogAreImportedOnceTheStoreTakesRowsAgain) {
    BatchedWriter& writer = flusher->writer();
    OutputRouter router(writer, LauncherFormat::OpenMpi, "host1", true);
    std::FILE* raw = createPrivateFile(runDir + "/" + kCompressedOutputName);
    RawOutputWriter compressed(raw);
    router.setRawLog(&compressed, runDir + "/" + kCompressedOutputName);
    router.setSpoolAbove(3);
    writer.setOutputOffsetSource([&] { return router.storedThrough(); });
    flusher->setRouter(&router);
    {
        Locker lock(path);
        for (int i = 0; i < 10; ++i) {
            const std::string line = "[1,0]<stdout>:line " + std::to_string(i) + "\n";
            router.append(OutputStream::Stdout, line.data(), line.size(), 1.0 + i);
        }
        flusher->flush(true);
        EXPECT_TRUE(router.spooling());
    }
    flusher->flush(true);
    EXPECT_FALSE(router.spooling());
    router.setRawLog(nullptr);
    EXPECT_TRUE(compressed.finish());
    std::fclose(raw);
    EXPECT_EQ(rows(), 10);
    // The spool's import read the file while it was written, from where its last turn stopped.
    EXPECT_EQ(readRawOutput(runDir + "/" + kCompressedOutputName).size(), static_cast<size_t>(compressed.bytesIn()));
    EXPECT_EQ(notices.count("warn: the store refused rows for a while; 7 row(s) kept meanwhile in output.log only "
                            "were imported from it"),
              1u)
        << (notices.said.empty() ? "" : notices.said[0]);
    EXPECT_EQ(notices.count("warn: the store refused rows for 0 s"), 1u);
}

TEST_F(Flusher, ADamagedStoreIsHandedOnOnceAndNothingMoreIsWritten) {
    flusher->add(row("before"));
    flusher->flush(true);
    test::garbleStorePages(path);
    test::touchStore(path);
    flusher->add(row("after"));
    flusher->flush(true);
    ASSERT_TRUE(flusher->damaged());
    ASSERT_EQ(damages.size(), 1u);
    flusher->add(row("later"));
    flusher->flush(true);
    EXPECT_EQ(damages.size(), 1u);
    RunOutcome outcome{RunState::Stopped, 0, "stopped on request (SIGTERM)"};
    try {
        flusher->finishRun(outcome, 2.0, [] { return false; });
        ADD_FAILURE() << "a damaged store took the run's end";
    } catch (const StoreDamaged& e) {
        const std::string said = e.what();
        EXPECT_NE(said.find(damages[0]), std::string::npos) << said;
        EXPECT_NE(said.find("Run " + std::to_string(run) + " stopped (stopped on request (SIGTERM))"),
                  std::string::npos)
            << said;
        EXPECT_NE(said.find("parallax-cli --store NEW.db import " + runDir), std::string::npos) << said;
    }
}

TEST_F(Flusher, TheRunsEndWaitsForALockedStore) {
    flusher->add(row("last"));
    auto lock = std::make_unique<Locker>(path);
    std::thread release([&] {
        std::this_thread::sleep_for(1500ms);
        lock->release();
    });
    const RunRecord r = flusher->finishRun({RunState::Succeeded, 0, ""}, 1234.5, [] { return false; });
    release.join();
    EXPECT_EQ(r.state, RunState::Succeeded);
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_DOUBLE_EQ(r.ended_at, 1234.5);
    EXPECT_EQ(rows(), 1);
}

TEST_F(Flusher, AStopRequestGivesUpWaitingAndNamesTheImport) {
    flusher->add(row("last"));
    Locker lock(path);
    try {
        flusher->finishRun({RunState::Failed, 1, "rank 1 failed"}, 1.0, [] { return true; });
        ADD_FAILURE() << "the end was written to a locked store";
    } catch (const StoreDamaged&) {
        ADD_FAILURE() << "a locked store is not damaged";
    } catch (const StoreError& e) {
        const std::string said = e.what();
        EXPECT_NE(said.find("they are in " + rawOutputPath(runDir) + ": run parallax-cli import " + std::to_string(run)),
                  std::string::npos)
            << said;
    }
}
