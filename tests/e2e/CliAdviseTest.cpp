// parallax-cli advise through the product's own path: the calibration and every layout tried are
// real runs on four CPU ranks, their step times read back through the store.

#include "tests/e2e/SmallGpt.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

using namespace parallax::testing;
namespace fs = std::filesystem;

namespace {

SmallGpt adviseSpec() {
    SmallGpt g;
    g.name = "adv";
    g.dim = 64;
    g.ffn = 256;
    g.vocab = 1024;
    g.seq_len = 64;
    g.global_batch = 8;
    g.dp = 4;
    return g;
}

struct Row {
    std::string excluded;
    double predicted = 0;
    double tokens = 0;
    int rank = 0;
};

std::map<std::string, Row> parseRows(const std::string& output) {
    std::map<std::string, Row> rows;
    std::istringstream in(output);
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("dp", 0) != 0) continue;
        std::vector<std::string> f;
        std::istringstream fields(line);
        for (std::string cell; std::getline(fields, cell, ',');) f.push_back(cell);
        f.resize(7);
        Row r;
        r.excluded = f[1];
        r.predicted = f[3].empty() ? 0 : std::stod(f[3]);
        r.tokens = f[4].empty() ? 0 : std::stod(f[4]);
        r.rank = f[6].empty() ? 0 : std::stoi(f[6]);
        rows[f[0]] = r;
    }
    return rows;
}

TEST(CliAdvise, RanksEveryLayoutOfFourRanksAndTriesTheBestSideBySide) {
    TempDir tmp;
    const std::string store = tmp.path() + "/parallax.db";
    const std::string spec = tmp.path() + "/adv.toml";
    std::ofstream(spec) << adviseSpec().toml();
    const ProcessResult r =
        runProcess({cliExecutable(), "--store", store, "advise", spec, "--devices", "4", "--try", "3", "--steps", "4", "--csv"});
    ASSERT_EQ(r.exitCode, 0) << r.output;
    const std::map<std::string, Row> rows = parseRows(r.output);

    // Every dp x tp x pp of 4, with every ZeRO stage where there is data parallelism: 15 layouts.
    EXPECT_EQ(rows.size(), 15u) << r.output;
    for (const char* label : {"dp4 tp1 pp1 zero3", "dp2 tp2 pp1 zero1", "dp2 tp1 pp2 zero0", "dp1 tp4 pp1 zero0",
                              "dp1 tp2 pp2 zero0", "dp1 tp1 pp4 zero0"})
        EXPECT_TRUE(rows.count(label)) << label << " is missing\n" << r.output;
    EXPECT_FALSE(rows.count("dp1 tp4 pp1 zero1")) << "ZeRO shards over data parallelism only";

    // Three of them tried, three different shapes, and the calibration's dp4 zero0 measured
    // besides when the model did not choose it; ranked by what they measured.
    const std::string calibration = "dp4 tp1 pp1 zero0";
    std::vector<std::pair<int, Row>> tried;
    for (const auto& [label, row] : rows) {
        if (row.excluded.empty()) {
            EXPECT_GT(row.predicted, 0) << label << " has no prediction";
        }
        if (row.rank == 0) continue;
        EXPECT_GT(row.tokens, 0) << label;
        tried.emplace_back(row.rank, row);
    }
    EXPECT_GT(rows.at(calibration).rank, 0) << r.output;
    ASSERT_TRUE(tried.size() == 3u || tried.size() == 4u) << r.output;
    std::set<std::string> shapes; // of the layouts the model chose
    for (const auto& [label, row] : rows)
        if (row.rank > 0 && !(tried.size() == 4u && label == calibration))
            shapes.insert(label.substr(0, label.find(" zero")));
    EXPECT_EQ(shapes.size(), 3u) << "one layout of each shape is tried";
    std::sort(tried.begin(), tried.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    EXPECT_EQ(tried.front().first, 1);
    for (const auto& [rank, row] : tried)
        EXPECT_GE(tried.front().second.tokens, row.tokens) << "the top measured choice is at least as fast as layout #" << rank;

    // Nothing of the probes is left.
    EXPECT_TRUE(processesMatching(tmp.path()).empty());
    for (const auto& entry : fs::directory_iterator(tmp.path()))
        EXPECT_EQ(entry.path().filename().string().find(".advise-"), std::string::npos) << entry.path();
}

// What the calibration probe measures besides its steps, in a run of its own on two ranks: each
// unit's time on every rank and all-reduces of every probe size over the world, kept with the run.
// (Not how long each takes: on a loaded machine a small all-reduce waits for the scheduler longer
// than a large one takes.)
TEST(CliAdvise, ARunTimesItsUnitsAndAllReducesWhenAsked) {
    TempDir tmp;
    const std::string store = tmp.path() + "/parallax.db";
    const std::string spec = tmp.path() + "/timed.toml";
    SmallGpt g = adviseSpec();
    g.name = "timed";
    g.dp = 2;
    std::ofstream(spec) << g.toml() << "[telemetry]\nunit_times = true\ncollective_times = true\n";
    const ProcessResult r = runProcess({cliExecutable(), "--store", store, "run", spec});
    ASSERT_EQ(r.exitCode, 0) << r.output;
    parallax::RunStore db(store);
    const std::optional<parallax::RunRecord> run = db.latestRunNamed("timed");
    ASSERT_TRUE(run.has_value());

    const std::vector<parallax::CollectiveTimeEvent> collectives = db.events<parallax::CollectiveTimeEvent>(run->id);
    ASSERT_EQ(collectives.size(), 4u) << "8 KiB, 128 KiB, 1 MiB and 8 MiB";
    const int64_t sizes[] = {8 << 10, 128 << 10, 1 << 20, 8 << 20};
    for (size_t i = 0; i < collectives.size(); ++i) {
        EXPECT_EQ(collectives[i].bytes, sizes[i]);
        EXPECT_EQ(collectives[i].ranks, 2);
        EXPECT_EQ(collectives[i].group, "world");
        EXPECT_EQ(collectives[i].op, "all_reduce");
        EXPECT_GT(collectives[i].ms, 0);
    }

    // The embedding, four blocks and the head, on each of the two ranks.
    const std::vector<parallax::UnitTimeEvent> units = db.events<parallax::UnitTimeEvent>(run->id);
    EXPECT_EQ(units.size(), 12u);
    for (const parallax::UnitTimeEvent& u : units) EXPECT_GT(u.forward_ms + u.backward_ms, 0) << "unit " << u.unit;
}

// The calibration measures its layout (the most data-parallel one): that layout is tried, with the
// time it measured, even where the model ranks others first, and it can be the one recommended.
TEST(CliAdvise, TheCalibrationsLayoutCountsAsTried) {
    TempDir tmp;
    const std::string store = tmp.path() + "/parallax.db";
    const std::string spec = tmp.path() + "/adv.toml";
    SmallGpt g = adviseSpec();
    g.dp = 2;
    std::ofstream(spec) << g.toml();
    // One layout tried: ZeRO 1 and 2 are predicted as fast as 0 and need less memory, so the model's
    // first choice is never the calibration's dp2 zero0.
    const ProcessResult r =
        runProcess({cliExecutable(), "--store", store, "advise", spec, "--devices", "2", "--try", "1", "--steps", "3", "--csv"});
    ASSERT_EQ(r.exitCode, 0) << r.output;
    const std::map<std::string, Row> rows = parseRows(r.output);
    ASSERT_TRUE(rows.count("dp2 tp1 pp1 zero0")) << r.output;
    const Row& calibration = rows.at("dp2 tp1 pp1 zero0");
    EXPECT_GT(calibration.rank, 0) << "measured by the calibration, listed as not tried\n" << r.output;
    EXPECT_GT(calibration.tokens, 0) << r.output;
    int measured = 0;
    double fastest = 0;
    std::string first;
    for (const auto& [label, row] : rows) {
        if (row.rank == 0) continue;
        ++measured;
        fastest = std::max(fastest, row.tokens);
        if (row.rank == 1) first = label;
    }
    EXPECT_EQ(measured, 2) << "the one tried and the calibration's\n" << r.output;
    ASSERT_FALSE(first.empty()) << r.output;
    EXPECT_EQ(rows.at(first).tokens, fastest) << "the recommendation is the fastest measured\n" << r.output;
}

TEST(CliAdvise, BadArgumentsAreUsageErrorsBeforeAnyProbe) {
    TempDir tmp;
    const std::string store = tmp.path() + "/parallax.db";
    const std::string spec = tmp.path() + "/adv.toml";
    std::ofstream(spec) << adviseSpec().toml();
    for (const std::vector<std::string>& bad : std::vector<std::vector<std::string>>{
             {"--devices", "0"}, {"--devices", "-1"}, {"--devices", "99999999999"}, {"--probe-timeout", "-1"}}) {
        std::vector<std::string> argv = {cliExecutable(), "--store", store, "advise", spec};
        argv.insert(argv.end(), bad.begin(), bad.end());
        const ProcessResult r = runProcess(argv);
        EXPECT_EQ(r.exitCode, 2) << bad[0] << " " << bad[1] << "\n" << r.output;
        EXPECT_NE(r.output.find(bad[0] + " " + bad[1] + " must be"), std::string::npos) << r.output;
        EXPECT_EQ(r.output.find("probing"), std::string::npos) << r.output;
    }
    EXPECT_FALSE(fs::exists(store)) << "nothing ran";
}

TEST(CliAdvise, SaysWhyNoLayoutCanRun) {
    TempDir tmp;
    const std::string store = tmp.path() + "/parallax.db";
    const std::string spec = tmp.path() + "/adv.toml";
    // For 2 devices: 7 samples do not split over dp = 2, 3 heads not over tp = 2, 1 layer not over pp = 2.
    SmallGpt g = adviseSpec();
    g.heads = 3;
    g.dim = 66;
    g.layers = 1;
    g.global_batch = 7;
    g.dp = 1;
    std::ofstream(spec) << g.toml();
    const ProcessResult r = runProcess({cliExecutable(), "--store", store, "advise", spec, "--devices", "2"});
    EXPECT_EQ(r.exitCode, 2) << r.output;
    EXPECT_NE(r.output.find("no layout of 2 devices can run this spec"), std::string::npos) << r.output;
    for (const char* layout : {"dp2 tp1 pp1 zero0: ", "dp1 tp2 pp1 zero0: ", "dp1 tp1 pp2 zero0: "})
        EXPECT_NE(r.output.find(layout), std::string::npos) << layout << " is not explained\n" << r.output;
    EXPECT_FALSE(fs::exists(store)) << "nothing ran";
}

} // namespace
