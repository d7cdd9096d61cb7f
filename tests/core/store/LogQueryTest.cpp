#include "core/store/RunStore.h"
#include "tests/core/store/TempDir.h"
#include "tests/core/store/ErrorOf.h"

#include <gtest/gtest.h>

namespace parallax {
namespace {

using test::TempDir;

class LogQueryTest : public ::testing::Test {
protected:
    TempDir dir;
    RunStore store{dir.file("parallax.db")};
    int64_t run = 0;
    int64_t other = 0;
    std::vector<int64_t> lineIds; // ids of `run`'s lines, in insertion order

    void SetUp() override {
        NewRun a;
        a.name = "logs";
        run = store.createRun(a);
        a.name = "neighbour";
        other = store.createRun(a);
        // Lines of two runs interleave, as when two supervisors write at once.
        const std::vector<std::tuple<int, const char*, const char*>> lines = {
            {0, "info", "starting training on 4 ranks"},
            {1, "debug", "NCCL INFO Channel 00/02 : 0 1 2 3"},
            {2, "warn", "NCCL WARN timeout waiting for peer"},
            {3, "error", "CUDA_ERROR_OUT_OF_MEMORY: out of memory on device 3"},
            {0, "info", "step 10 loss=nan grad_norm=inf"},
            {1, "error", "ncclInternalError: memory allocation failed"},
            {2, "info", "checkpoint written to /runs/1/step-100"},
            {-1, "warning", "supervisor: rank 3 exited with code 1"},
        };
        int n = 0;
        for (const auto& [rank, level, message] : lines) {
            LogRow row;
            row.t = 100.0 + n;
            row.rank = rank;
            row.host = rank < 0 ? "login" : "node" + std::to_string(rank / 2);
            row.level = LogLevel::fromName(level);
            row.stream = rank < 0 ? "supervisor" : "stdout";
            row.message = message;
            lineIds.push_back(store.insertLog(run, row));
            LogRow theirs = row;
            theirs.message = std::string("neighbour: ") + message;
            store.insertLog(other, theirs);
            ++n;
        }
    }

    std::vector<int64_t> ids(const LogQuery& q) {
        std::vector<int64_t> out;
        for (const auto& r : store.logs(run, q)) out.push_back(r.id);
        if (q.limit < 0 && q.offset == 0) {
            EXPECT_EQ(store.logCount(run, q), static_cast<int64_t>(out.size()));
        }
        return out;
    }
    std::vector<int64_t> lines(std::initializer_list<int> idx) {
        std::vector<int64_t> out;
        for (int i : idx) out.push_back(lineIds[i]);
        return out;
    }
};

TEST_F(LogQueryTest, EveryFieldRoundTripsAndLevelsAreNormalized) {
    const auto all = store.logs(run);
    ASSERT_EQ(all.size(), 8u);
    EXPECT_EQ(all[3].id, lineIds[3]);
    EXPECT_EQ(all[3].t, 103.0);
    EXPECT_EQ(all[3].rank, 3);
    EXPECT_EQ(all[3].host, "node1");
    EXPECT_EQ(all[3].level, LogLevel::Error);
    EXPECT_EQ(all[3].stream, "stdout");
    EXPECT_EQ(all[3].message, "CUDA_ERROR_OUT_OF_MEMORY: out of memory on device 3");
    EXPECT_EQ(all[7].level, LogLevel::Warn); // "warning"
    EXPECT_EQ(all[7].rank, -1);
    EXPECT_EQ(all[7].stream, "supervisor");
    EXPECT_EQ(store.logCount(run), 8);
    EXPECT_EQ(store.logCount(other), 8);
}

TEST_F(LogQueryTest, RankMultiSelect) {
    LogQuery q;
    q.ranks = {1, 3};
    EXPECT_EQ(ids(q), lines({1, 3, 5}));
    EXPECT_EQ(store.logCount(run, q), 3);
    q.ranks = {-1};
    EXPECT_EQ(ids(q), lines({7}));
    q.ranks = {42};
    EXPECT_TRUE(ids(q).empty());
}

TEST_F(LogQueryTest, MinimumLevel) {
    LogQuery q;
    q.min_level = "warn";
    EXPECT_EQ(ids(q), lines({2, 3, 5, 7}));
    q.min_level = "error";
    EXPECT_EQ(ids(q), lines({3, 5}));
    q.min_level = "info";
    EXPECT_EQ(ids(q).size(), 7u);
    q.min_level = "debug";
    EXPECT_EQ(ids(q).size(), 8u);
    q.min_level = "loud";
    EXPECT_NE(errorOf([&] { store.logs(run, q); }).find("unknown level 'loud'"), std::string::npos);
}

TEST_F(LogQueryTest, FullTextSearchStaysInsideTheRun) {
    LogQuery q;
    q.match = "memory";
    EXPECT_EQ(ids(q), lines({3, 5}));
    EXPECT_EQ(store.logCount(run, q), 2);
    EXPECT_EQ(store.logCount(other, q), 2);
    q.match = "nccl";  // case-insensitive, a whole word
    EXPECT_EQ(ids(q), lines({1, 2}));
    q.match = "nccl*"; // prefix
    EXPECT_EQ(ids(q), lines({1, 2, 5}));
    q.match = "memory out"; // every word, any order
    EXPECT_EQ(ids(q), lines({3}));
    q.match = "loss=nan"; // punctuation needs no escaping
    EXPECT_EQ(ids(q), lines({4}));
    q.match = "CUDA_ERROR_OUT_OF_MEMORY";
    EXPECT_EQ(ids(q), lines({3}));
    q.match = "/runs/1/step-100";
    EXPECT_EQ(ids(q), lines({6}));
    q.match = "neighbour";
    EXPECT_TRUE(ids(q).empty());
    q.match = "\"out of memory\" OR timeout"; // FTS5 syntax
    EXPECT_EQ(ids(q), lines({2, 3}));
    q.match = "memory NOT nccl*";
    EXPECT_EQ(ids(q), lines({3}));
}

TEST_F(LogQueryTest, InvalidFullTextSyntaxIsAClearError) {
    LogQuery q;
    q.match = "(memory OR";
    const std::string what = errorOf([&] { store.logs(run, q); });
    EXPECT_NE(what.find("log search"), std::string::npos) << what;
    EXPECT_NE(what.find("(memory OR"), std::string::npos) << what;
    EXPECT_NE(what.find("\"out of memory\""), std::string::npos) << what;
    EXPECT_NE(errorOf([&] { store.logCount(run, q); }).find("log search"), std::string::npos);
    // A quote never closed is the same kind of mistake, not a raw SQL error.
    q.match = "\"out of memory";
    const std::string quote = errorOf([&] { store.logs(run, q); });
    EXPECT_NE(quote.find("log search: cannot understand '\"out of memory' (unterminated string)"), std::string::npos)
        << quote;
    EXPECT_EQ(quote.find("statement failed"), std::string::npos) << quote;
}

TEST_F(LogQueryTest, FiltersCombine) {
    LogQuery q;
    q.match = "memory";
    q.ranks = {1};
    EXPECT_EQ(ids(q), lines({5}));
    q.ranks.clear();
    q.min_level = "error";
    q.match = "nccl*";
    EXPECT_EQ(ids(q), lines({5}));
}

TEST_F(LogQueryTest, FollowAfterIdWithLimitOffsetAndOrder) {
    LogQuery q;
    q.after_id = lineIds[4];
    EXPECT_EQ(ids(q), lines({5, 6, 7}));
    EXPECT_EQ(store.logCount(run, q), 3);
    q.after_id = lineIds[7];
    EXPECT_TRUE(ids(q).empty());

    // New lines arrive; following from the last seen id returns exactly them.
    LogRow row;
    row.rank = 0;
    row.message = "step 20 out of memory again";
    const int64_t fresh = store.insertLog(run, row);
    EXPECT_EQ(ids(q), (std::vector<int64_t>{fresh}));
    q.match = "memory";
    EXPECT_EQ(ids(q), (std::vector<int64_t>{fresh}));
    q.after_id = fresh;
    EXPECT_TRUE(ids(q).empty());
    EXPECT_EQ(store.logCount(run, q), 0);

    LogQuery page;
    page.limit = 3;
    page.offset = 2;
    EXPECT_EQ(ids(page), lines({2, 3, 4}));
    page.descending = true;
    EXPECT_EQ(ids(page), lines({6, 5, 4}));
    EXPECT_EQ(store.logCount(run, page), 9); // the count ignores limit and offset
    page.match = "memory";
    page.offset = 0;
    page.limit = 2;
    EXPECT_EQ(ids(page), (std::vector<int64_t>{fresh, lineIds[5]}));
}

TEST_F(LogQueryTest, RunWithoutLinesAnswersEmpty) {
    NewRun r;
    r.name = "silent";
    const int64_t silent = store.createRun(r);
    LogQuery q;
    EXPECT_TRUE(store.logs(silent, q).empty());
    q.match = "memory";
    EXPECT_TRUE(store.logs(silent, q).empty());
    EXPECT_EQ(store.logCount(silent, q), 0);
}

} // namespace
} // namespace parallax
