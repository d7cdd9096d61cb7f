// parallax-cli trace: a pp=2 run's store written as a Chrome/Perfetto trace, checked against the
// trace-event format's required fields and ordering, and against every span the store holds.

#include "core/store/RunStore.h"
#include "tests/support/Process.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <tuple>

using namespace parallax;
using namespace parallax::testing;

namespace {

std::string cli() {
    return buildDir() + "/app/parallax-cli";
}

// The trace-event format's rules for the phases the trace uses; empty when `e` keeps them.
std::string formatProblem(const nlohmann::json& e) {
    for (const char* field : {"name", "ph", "pid", "tid", "ts"})
        if (!e.contains(field)) return std::string("no \"") + field + "\"";
    if (!e["name"].is_string() || !e["ph"].is_string()) return "name and ph must be strings";
    if (!e["pid"].is_number_integer() || !e["tid"].is_number_integer()) return "pid and tid must be integers";
    if (!e["ts"].is_number() || e["ts"].get<double>() < 0) return "ts must be a number from 0";
    const std::string ph = e["ph"];
    if (ph == "X" && !(e.contains("dur") && e["dur"].is_number() && e["dur"].get<double>() >= 0))
        return "a complete event needs a dur from 0";
    if (ph == "i" && !(e.contains("s") && std::set<std::string>{"g", "p", "t"}.count(e["s"].get<std::string>())))
        return "an instant event needs a scope s of g, p or t";
    if (ph == "C") {
        if (!e.contains("args") || !e["args"].is_object() || e["args"].empty()) return "a counter needs values";
        for (const auto& [k, v] : e["args"].items())
            if (!v.is_number()) return "counter value " + k + " is not a number";
    }
    if (ph == "M" && !(e.contains("args") && e["args"].is_object())) return "metadata needs args";
    if (!std::set<std::string>{"X", "i", "C", "M"}.count(ph)) return "unexpected phase " + ph;
    return {};
}

TEST(CliTrace, APipelineRunsTraceKeepsTheFormatAndEverySpanOfTheStore) {
    TempDir tmp;
    const std::string store = tmp.path() + "/parallax.db";
    const std::string spec = tmp.path() + "/pp.toml";
    std::ofstream(spec) << "name = \"traced\"\n"
                           "[model]\nkind = \"gpt\"\npreset = \"tiny\"\n"
                           "[data]\nkind = \"synthetic\"\n"
                           "[train]\nsteps = 8\nglobal_batch = 8\nmicro_batch = 2\nlr = 1e-3\nwarmup = 2\n"
                           "checkpoint_every = 4\n"
                           "[parallel]\npp = 2\nschedule = \"1f1b\"\n"
                           "[telemetry]\ndevice_sample_ms = 100\nspan_every = 2\n";
    const ProcessResult r = runProcess({cli(), "--store", store, "run", spec});
    ASSERT_EQ(r.exitCode, 0) << r.output;

    const std::string out = tmp.path() + "/trace.json";
    const ProcessResult t = runProcess({cli(), "--store", store, "trace", "traced", "-o", out});
    ASSERT_EQ(t.exitCode, 0) << t.output;
    EXPECT_NE(t.output.find("perfetto"), std::string::npos) << t.output;
    std::ifstream in(out);
    const nlohmann::json trace = nlohmann::json::parse(in);
    ASSERT_TRUE(trace.is_object());
    ASSERT_TRUE(trace.contains("traceEvents") && trace["traceEvents"].is_array());
    const auto& events = trace["traceEvents"];

    RunStore db(store);
    const auto run = db.findRun("traced");
    ASSERT_TRUE(run);
    const double origin = trace["otherData"]["origin_epoch_s"].get<double>();

    // Metadata first, then every other event in timestamp order; each one well formed.
    bool pastMetadata = false;
    double lastTs = 0;
    std::map<int, std::string> processNames;          // pid -> host (or the run)
    std::map<std::pair<int, int>, std::string> threads; // (pid, tid) -> "rank N"
    std::multiset<std::tuple<int, std::string, int64_t, int64_t, int64_t>> traced; // rank, kind, stage, step, mb
    std::map<std::string, int64_t> byCategory;
    for (const auto& e : events) {
        const std::string problem = formatProblem(e);
        ASSERT_TRUE(problem.empty()) << problem << ": " << e.dump();
        if (e["ph"] == "M") {
            EXPECT_FALSE(pastMetadata) << "metadata after timed events: " << e.dump();
            if (e["name"] == "process_name") processNames[e["pid"]] = e["args"]["name"];
            if (e["name"] == "thread_name") threads[{e["pid"], e["tid"]}] = e["args"]["name"];
            continue;
        }
        pastMetadata = true;
        EXPECT_GE(e["ts"].get<double>(), lastTs) << "out of order: " << e.dump();
        lastTs = e["ts"].get<double>();
        const std::string cat = e.value("cat", "");
        ++byCategory[cat];
        if (cat == "span") {
            const auto& a = e["args"];
            traced.insert({e["tid"].get<int>(), a["kind"].get<std::string>(), a["stage"].get<int64_t>(),
                           a["step"].get<int64_t>(), a["microbatch"].get<int64_t>()});
        }
    }

    // One track per rank, inside the process of its host.
    const auto start = db.runStart(run->id);
    ASSERT_TRUE(start);
    ASSERT_EQ(start->hosts.size(), 2u);
    for (int rank = 0; rank < 2; ++rank) {
        bool found = false;
        for (const auto& [key, name] : threads)
            if (key.second == rank && name == "rank " + std::to_string(rank)) {
                found = true;
                EXPECT_EQ(processNames[key.first], start->hosts[size_t(rank)]);
            }
        EXPECT_TRUE(found) << "no track for rank " << rank;
    }

    // Every span of the store is in the trace, at its time from the trace's origin, and nothing else.
    std::multiset<std::tuple<int, std::string, int64_t, int64_t, int64_t>> stored;
    int64_t spans = 0;
    for (int64_t step : db.spanSteps(run->id))
        for (const SpanEvent& s : db.spans(run->id, step)) {
            stored.insert({s.rank, s.kind, s.stage, s.step, s.microbatch});
            ++spans;
            bool atItsTime = false;
            for (const auto& e : events)
                if (e.value("cat", "") == "span" && e["tid"] == s.rank && e["args"]["step"] == s.step &&
                    e["args"]["microbatch"] == s.microbatch && e["args"]["kind"] == s.kind)
                    atItsTime = atItsTime || (std::abs(e["ts"].get<double>() - (s.start - origin) * 1e6) < 1.0 &&
                                              std::abs(e["dur"].get<double>() - (s.end - s.start) * 1e6) < 1.0);
            EXPECT_TRUE(atItsTime) << "rank " << s.rank << " " << s.kind << " step " << s.step << " mb " << s.microbatch;
        }
    ASSERT_GT(spans, 0);
    EXPECT_EQ(traced, stored);
    EXPECT_EQ(byCategory["step"], int64_t(db.metrics(run->id).size()));
    EXPECT_EQ(byCategory["checkpoint"], int64_t(db.checkpoints(run->id).size()));
    EXPECT_GE(byCategory["checkpoint"], 2); // step 4 and the end
    EXPECT_EQ(byCategory["log"], int64_t(db.logs(run->id).size()));

    // A run the store does not have is named, and nothing is written.
    const std::string none = tmp.path() + "/none.json";
    const ProcessResult unknown = runProcess({cli(), "--store", store, "trace", "no-such-run", "-o", none});
    EXPECT_NE(unknown.exitCode, 0);
    EXPECT_NE(unknown.output.find("no-such-run"), std::string::npos) << unknown.output;
    EXPECT_FALSE(std::ifstream(none).good());
}

} // namespace
