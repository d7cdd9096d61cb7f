// The scale benchmark's stand-in mpirun (bench/scale/ScaleLauncher.cpp) through the real
// supervisor, at 8 ranks: every line it writes becomes a row of its kind, the rank it makes
// silent is the one the hang alert names, and once the supervisor thins the older device samples
// and rank steps their rows still stand for every line, the named slow rank's kept raw.
#include "bench/scale/ScaleLayout.h"
#include "bench/scale/ScaleRun.h"
#include "bench/scale/StoredTelemetry.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>

using namespace parallax;
using namespace parallax::scale;
namespace fs = std::filesystem;

namespace {

class ScaleLauncher : public ::testing::Test {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/parallax-scale-test-XXXXXX";
        ASSERT_NE(mkdtemp(tmpl), nullptr);
        m_dir = tmpl;
        m_counts = (m_dir / "lines-written.txt").string();
        setenv(kCountsEnv, m_counts.c_str(), 1);
        setenv(kStragglerEnv, "0", 1);
        unsetenv(kRanksEnv);
    }
    void TearDown() override {
        unsetenv(kCountsEnv);
        unsetenv(kSecondsEnv);
        unsetenv(kHangAtEnv);
        unsetenv(kStragglerEnv);
        std::error_code ec;
        fs::remove_all(m_dir, ec);
    }

    // Supervises 8 ranks for `seconds`; the lines written and the rows stored, per kind.
    RunRecord run(double seconds, double hangAt, int64_t hangAfterS, int64_t rawMinutes = 0) {
        setenv(kSecondsEnv, std::to_string(seconds).c_str(), 1);
        setenv(kHangAtEnv, std::to_string(hangAt).c_str(), 1);
        m_store = std::make_unique<RunStore>((m_dir / "parallax.db").string());
        const RunRecord r = superviseScaleRun(*m_store, kRanks, seconds, PARALLAX_SCALE_LAUNCHER, false, hangAfterS,
                                             rawMinutes);
        const std::optional<Emitted> emitted = readEmitted(m_counts);
        EXPECT_TRUE(emitted.has_value()) << "the launcher wrote no counts to " << m_counts;
        if (emitted) m_emitted = *emitted;
        m_stored = storedRows(*m_store, r.id);
        return r;
    }

    int64_t written(const std::string& kind) const {
        const auto it = m_emitted.lines.find(kind);
        return it == m_emitted.lines.end() ? 0 : it->second;
    }

    static constexpr int kRanks = 8;
    fs::path m_dir;
    std::string m_counts;
    std::unique_ptr<RunStore> m_store;
    Emitted m_emitted;
    std::map<std::string, int64_t> m_stored;
};

TEST_F(ScaleLauncher, EveryLineOfEachKindIsARowAndTheRunSucceeds) {
    const RunRecord r = run(4, -1, 30);
    EXPECT_EQ(r.state, RunState::Succeeded) << r.exit_reason;
    for (const std::string& m : mismatches(m_emitted, m_stored)) ADD_FAILURE() << m;
    EXPECT_EQ(written("run_start"), 1);
    EXPECT_EQ(written("text"), kRanks);
    EXPECT_EQ(written("run_end"), 1);
    EXPECT_GE(written("step"), 3);
    EXPECT_EQ(written("rank_step"), kRanks * written("step"));
    EXPECT_GE(written("device"), kRanks * 7);
    EXPECT_GE(written("comm"), kRanks * 2);
    EXPECT_GT(written("span"), 0); // step 0's pipeline spans
    // 8 ranks are dp 1 x tp 2 x pp 4 on one host.
    const std::optional<RunStartEvent> start = m_store->runStart(r.id);
    ASSERT_TRUE(start.has_value());
    EXPECT_EQ(start->world, kRanks);
    EXPECT_EQ(start->tp, 2);
    EXPECT_EQ(start->pp, 4);
    EXPECT_EQ(start->hosts.back(), "node0");
}

TEST_F(ScaleLauncher, TheSilentRankIsTheOneTheHangNames) {
    // Silent from 3 s: the last step ends at 2 s; a hang is named 5 s later (5 x the 1 s step).
    const RunRecord r = run(12, 3, 2);
    for (const std::string& m : mismatches(m_emitted, m_stored)) ADD_FAILURE() << m;
    EXPECT_EQ(written("run_end"), 0);
    EXPECT_NE(r.state, RunState::Succeeded);
    ASSERT_EQ(m_emitted.hang_rank, hangRank(kRanks));
    std::optional<RunAlert> hang;
    for (const RunAlert& a : m_store->alerts(r.id))
        if (a.kind == AlertKind::Hang) hang = a;
    ASSERT_TRUE(hang.has_value()) << "no hang alert";
    EXPECT_EQ(hang->ranks, std::vector<int>{m_emitted.hang_rank}) << hang->message;
    EXPECT_NE(hang->message.find("rank " + std::to_string(m_emitted.hang_rank)), std::string::npos) << hang->message;
    EXPECT_NE(hang->message.find("all_reduce"), std::string::npos) << hang->message;
}

TEST_F(ScaleLauncher, ThinnedRowsStandForEveryLineAndTheNamedRankStaysRaw) {
    // Raw for 1 minute (the least): by 105 s the device samples of the first 30 s window and the
    // rank steps 0 to 19 (written by 20 s) are over a minute old and thinned, the rows of steps
    // thinned standing for 20 steps each. The slow rank is named from step 14 on and stays raw.
    setenv(kStragglerEnv, "1", 1);
    const RunRecord r = run(105, -1, 30, 1);
    EXPECT_EQ(r.state, RunState::Succeeded) << r.exit_reason;
    for (const std::string& m : mismatches(m_emitted, m_stored)) ADD_FAILURE() << m;
    const StoredTelemetry t = storedTelemetry(*m_store, r.id);
    EXPECT_EQ(t.deviceSamples, written("device"));
    EXPECT_LT(t.deviceRows, t.deviceSamples) << "no device sample was thinned";
    EXPECT_EQ(t.rankSteps, written("rank_step"));
    EXPECT_LT(t.rankStepRows, t.rankSteps) << "no rank step was thinned";
    const std::optional<double> mark = m_store->thinnedUntil(r.id, "rank_step");
    ASSERT_TRUE(mark.has_value());
    EXPECT_GE(*mark, double(kThinnedStepWindow));
    // Below the mark: one row per window of 20 steps for every rank but the slow one, whose every
    // step is a row of its own.
    ASSERT_EQ(m_emitted.straggler_rank, stragglerRank(kRanks));
    std::map<int, int64_t> below;
    for (const RankStepEvent& e : m_store->events<RankStepEvent>(r.id))
        if (double(e.step) < *mark) ++below[e.rank];
    const int64_t thinnedSteps = static_cast<int64_t>(*mark);
    for (int rank = 0; rank < kRanks; ++rank)
        EXPECT_EQ(below[rank], rank == m_emitted.straggler_rank ? thinnedSteps : thinnedSteps / kThinnedStepWindow)
            << "rank " << rank;
}

} // namespace
