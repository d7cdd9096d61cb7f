// parallax-cli fit through the product's own path: every probe is a real run (parallax-cli run,
// mpirun, the workers) whose peak memory comes back through the store.

#include "tests/e2e/SmallGpt.h"

#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <unistd.h>

using namespace parallax::testing;
namespace fs = std::filesystem;

namespace {

// A GPT whose activations outweigh its weights, on two CPU ranks: its peak grows by tens of MiB
// per sample, far more than the resident size varies between runs.
SmallGpt fitSpec() {
    SmallGpt g;
    g.name = "fit";
    return g;
}

struct Row {
    bool ran = false;
    double peak = 0;
    double estimate = 0;
    bool fits = false;
    bool largest = false;
};
// (activation checkpointing, micro-batch) -> row, from --csv output (progress lines skipped).
using Rows = std::map<std::pair<bool, int64_t>, Row>;

Rows parseRows(const std::string& output) {
    Rows rows;
    std::istringstream in(output);
    std::string line;
    while (std::getline(in, line)) {
        if (line.size() < 2 || (line[0] != '0' && line[0] != '1') || line[1] != ',') continue;
        std::istringstream fields(line);
        std::string ac, mb, ran, peak, estimate, fits, largest;
        std::getline(fields, ac, ',');
        std::getline(fields, mb, ',');
        std::getline(fields, ran, ',');
        std::getline(fields, peak, ',');
        std::getline(fields, estimate, ',');
        std::getline(fields, fits, ',');
        std::getline(fields, largest, ',');
        rows[{ac == "1", std::stoll(mb)}] = Row{ran == "1", std::stod(peak), std::stod(estimate), fits == "1", largest == "1"};
    }
    return rows;
}

int64_t largestOf(const Rows& rows, bool checkpointing) {
    for (const auto& [key, row] : rows)
        if (key.first == checkpointing && row.largest) return key.second;
    return 0;
}

// Nothing of the probes is left: no process and no file beside the store.
void expectNothingLeft(const std::string& folder) {
    EXPECT_TRUE(processesMatching(folder).empty()) << "a probe's process outlived fit";
    for (const auto& entry : fs::directory_iterator(folder))
        EXPECT_EQ(entry.path().filename().string().find(".fit-"), std::string::npos)
            << entry.path() << " is left of the probes";
}

TEST(CliFit, FindsTheLargestMicroBatchUnderALimitByProbingAndBisecting) {
    TempDir tmp;
    const std::string store = tmp.path() + "/parallax.db";
    const std::string spec = tmp.path() + "/fit.toml";
    std::ofstream(spec) << fitSpec().toml();

    // Without a limit that binds: every size up to the most asked for fits, with and without
    // activation checkpointing, and checkpointing lowers the measured peak.
    const ProcessResult open = runProcess(
        {cliExecutable(), "--store", store, "fit", spec, "--memory-limit", "100GiB", "--max-micro-batch", "4", "--csv"});
    ASSERT_EQ(open.exitCode, 0) << open.output;
    const Rows all = parseRows(open.output);
    for (const bool ac : {false, true}) {
        for (const int64_t mb : {1, 2, 4}) {
            ASSERT_TRUE(all.count({ac, mb})) << "micro-batch " << mb << " was not probed\n" << open.output;
            const Row& r = all.at({ac, mb});
            EXPECT_TRUE(r.ran && r.fits) << mb;
            EXPECT_GT(r.peak, r.estimate * 0.5) << "the measured peak is the ranks' memory";
        }
        EXPECT_EQ(largestOf(all, ac), 4);
        EXPECT_GT(all.at({ac, 4}).peak, all.at({ac, 1}).peak) << "a larger micro-batch holds more";
    }
    EXPECT_LT(all.at({true, 4}).peak, all.at({false, 4}).peak) << "checkpointing keeps fewer activations";
    expectNothingLeft(tmp.path());

    // A limit a quarter of the way from micro-batch 2's peak to 4's: 2 fits, 3 does not, and the
    // search ends on them (doubling to 4, then one step of bisection).
    const double p2 = all.at({false, 2}).peak, p4 = all.at({false, 4}).peak;
    const int64_t limit = static_cast<int64_t>(p2 + 0.25 * (p4 - p2));
    const ProcessResult bound =
        runProcess({cliExecutable(), "--store", store, "fit", spec, "--memory-limit", std::to_string(limit),
                    "--max-micro-batch", "64", "--activation-checkpointing", "off", "--csv"});
    EXPECT_EQ(bound.exitCode, 0) << bound.output;
    const Rows rows = parseRows(bound.output);
    for (const auto& [key, row] : rows) {
        EXPECT_FALSE(key.first) << "only the series asked for";
        if (row.ran) {
            EXPECT_EQ(row.fits, row.peak <= static_cast<double>(limit)) << key.second;
        }
    }
    EXPECT_EQ(largestOf(rows, false), 2) << bound.output;
    ASSERT_TRUE(rows.count({false, 3})) << "the size above the answer was probed\n" << bound.output;
    EXPECT_FALSE(rows.at({false, 3}).fits);
    EXPECT_EQ(rows.size(), 4u) << "1, 2, 4, then 3: " << bound.output;
    expectNothingLeft(tmp.path());

    // A limit below what even one sample needs: the command fails and says what to change.
    const ProcessResult none =
        runProcess({cliExecutable(), "--store", store, "fit", spec, "--memory-limit", "1MiB", "--activation-checkpointing", "off"});
    EXPECT_EQ(none.exitCode, 1) << none.output;
    EXPECT_NE(none.output.find("not even micro-batch 1 fits"), std::string::npos) << none.output;
    EXPECT_NE(none.output.find("parallel.zero = 3"), std::string::npos) << none.output;
    expectNothingLeft(tmp.path());
}

// Stopping fit (SIGTERM, as the console's Stop does) stops the probe under way and removes it.
TEST(CliFit, AStoppedFitStopsItsProbeAndLeavesNothing) {
    TempDir tmp;
    const std::string store = tmp.path() + "/parallax.db";
    const std::string spec = tmp.path() + "/fit.toml";
    std::ofstream(spec) << fitSpec().toml();
    BackgroundProcess fit = startProcess({cliExecutable(), "--store", store, "fit", spec, "--memory-limit", "100GiB",
                                          "--steps", "200", "--activation-checkpointing", "off"},
                                         tmp.path() + "/fit.out");
    // A probe's ranks are running once its supervisor and both ranks name this test's probe store
    // (other tests' probes may run beside it).
    bool probing = false;
    for (int i = 0; i < 600 && !probing; ++i) {
        size_t probes = 0;
        for (pid_t pid : processesMatching(store + ".fit-"))
            probes += pid != fit.pid;
        probing = probes >= 3;
        if (!probing) usleep(100 * 1000);
    }
    ASSERT_TRUE(probing) << fit.output();
    ASSERT_EQ(kill(fit.pid, SIGTERM), 0);
    EXPECT_EQ(fit.wait(), 3) << fit.output();
    EXPECT_NE(fit.output().find("fit: stopped while probing fit-fit-mb1;"), std::string::npos) << fit.output();
    expectNothingLeft(tmp.path());
}

// A probe that runs out of time is no answer: not "does not fit" (which made the largest size that
// fits a smaller one), and fit ends saying it could not decide.
TEST(CliFit, AProbeThatTimesOutLeavesTheQuestionOpen) {
    TempDir tmp;
    const std::string store = tmp.path() + "/parallax.db";
    const std::string spec = tmp.path() + "/fit.toml";
    std::ofstream(spec) << fitSpec().toml();
    const ProcessResult r = runProcess({cliExecutable(), "--store", store, "fit", spec, "--memory-limit", "100GiB",
                                        "--steps", "200", "--activation-checkpointing", "off", "--probe-timeout", "1"});
    EXPECT_EQ(r.exitCode, 4) << r.output;
    EXPECT_NE(r.output.find("fit: could not decide without activation checkpointing: the probe of micro-batch 1 did "
                            "not finish within 1s, so whether it fits is not known; no micro-batch is known to fit; "
                            "give each probe more time with --probe-timeout"),
              std::string::npos)
        << r.output;
    EXPECT_EQ(r.output.find("not even micro-batch 1 fits"), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("largest micro-batch"), std::string::npos) << r.output;
    expectNothingLeft(tmp.path());
}

// A fit killed with SIGKILL cannot clean up: the next fit of the store removes what it left, once
// nothing of it runs any more.
TEST(CliFit, WhatAKilledFitLeftIsRemovedByTheNext) {
    TempDir tmp;
    const std::string store = tmp.path() + "/parallax.db";
    const std::string spec = tmp.path() + "/fit.toml";
    std::ofstream(spec) << fitSpec().toml();
    BackgroundProcess killed = startProcess({cliExecutable(), "--store", store, "fit", spec, "--memory-limit", "100GiB",
                                             "--steps", "200", "--activation-checkpointing", "off"},
                                            tmp.path() + "/killed.out");
    const std::string probes = store + ".fit-" + std::to_string(killed.pid);
    ASSERT_TRUE(waitUntil([&] { return processesMatching(probes).size() >= 3; }, std::chrono::seconds(60)))
        << killed.output();
    ASSERT_EQ(kill(killed.pid, SIGKILL), 0);
    killed.wait();
    for (pid_t pid : processesMatching(probes)) kill(pid, SIGKILL); // its probe, as a crash would end it
    ASSERT_TRUE(waitUntil([&] { return processesMatching(probes).empty(); }, std::chrono::seconds(30)));
    ASSERT_TRUE(fs::exists(probes + ".db")) << "the killed fit left nothing to remove";

    const ProcessResult next = runProcess({cliExecutable(), "--store", store, "fit", spec, "--memory-limit", "100GiB",
                                           "--steps", "200", "--activation-checkpointing", "off", "--probe-timeout",
                                           "1"});
    EXPECT_EQ(next.exitCode, 4) << next.output;
    expectNothingLeft(tmp.path());
}

TEST(CliFit, ABadProbeTimeoutIsAUsageErrorAndStartsNothing) {
    TempDir tmp;
    const std::string store = tmp.path() + "/parallax.db";
    const std::string spec = tmp.path() + "/fit.toml";
    std::ofstream(spec) << fitSpec().toml();
    for (const char* timeout : {"-1", "0", "nan"}) {
        const ProcessResult r =
            runProcess({cliExecutable(), "--store", store, "fit", spec, "--memory-limit", "100GiB", "--probe-timeout", timeout});
        EXPECT_EQ(r.exitCode, 2) << timeout << "\n" << r.output;
        EXPECT_NE(r.output.find(std::string("--probe-timeout ") + timeout + " must be more than 0"), std::string::npos)
            << r.output;
        EXPECT_EQ(r.output.find("probing"), std::string::npos) << r.output;
    }
    EXPECT_FALSE(fs::exists(store)) << "nothing ran";
    expectNothingLeft(tmp.path());
}

TEST(CliFit, ABadLimitOrSpecIsAUsageErrorAndStartsNothing) {
    TempDir tmp;
    const std::string store = tmp.path() + "/parallax.db";
    const std::string spec = tmp.path() + "/fit.toml";
    std::ofstream(spec) << fitSpec().toml();
    const ProcessResult size = runProcess({cliExecutable(), "--store", store, "fit", spec, "--memory-limit", "lots"});
    EXPECT_EQ(size.exitCode, 2) << size.output;
    EXPECT_NE(size.output.find("--memory-limit \"lots\" is not a size"), std::string::npos) << size.output;
    SmallGpt badSpec = fitSpec();
    badSpec.heads = 3; // does not divide dim 128
    std::ofstream(spec) << badSpec.toml();
    const ProcessResult bad = runProcess({cliExecutable(), "--store", store, "fit", spec});
    EXPECT_EQ(bad.exitCode, 2) << bad.output;
    EXPECT_NE(bad.output.find("model.heads"), std::string::npos) << bad.output;
    EXPECT_FALSE(fs::exists(store)) << "nothing ran";
}

} // namespace
