#include "core/telemetry/TelemetryCodec.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>
#include <set>

using namespace parallax;

namespace {

RunStartEvent fullRunStart() {
    RunStartEvent e;
    e.world = 8;
    e.dp = 2;
    e.tp = 2;
    e.pp = 2;
    e.zero = 3;
    e.schedule = "interleaved";
    e.params = 1234567890123;
    e.flops_per_token = 6.02e9;
    e.peak_flops = 989.4e12;
    e.device = "cuda";
    e.hosts = {"node-a", "node-a", "node-b", "n\xC3\xB6" "de-\"c\""};
    e.devices = {"NVIDIA H200 #0", "NVIDIA H200 #1", "cpu", ""};
    e.clock_offsets = {0.0, -1.5e-6, 3.25e-4, 0.1};
    e.pids = {4242, 4243, 17, 2147483648LL};
    e.start_step = 400;
    e.t = 1714567890.123456;
    return e;
}

StepEvent fullStep() {
    StepEvent e;
    e.step = 123456789012;
    e.loss = 2.718281828459045;
    e.lr = 3e-4;
    e.grad_norm = 0.87;
    e.tokens_per_s = 123456.5;
    e.samples_per_s = 64.25;
    e.step_ms = 812.5;
    e.step_ms_min = 800.1;
    e.step_ms_max = 830.9;
    e.slowest_rank = 7;
    e.mfu = 0.4321;
    e.tokens = 9007199254740993; // above 2^53: must stay an exact integer
    e.peak_mem = 7.5e10;
    e.t = 1714567891.5;
    return e;
}

DeviceEvent fullDevice() {
    DeviceEvent e;
    e.rank = 5;
    e.host = "gpu-node-17";
    e.device = 3;
    e.util = 97.5;
    e.mem_used = 6.4e10;
    e.mem_total = 1.4e11;
    e.power_w = 612.25;
    e.temp_c = 61;
    e.sm_clock_mhz = 1980;
    e.cpu_pct = 101.5;
    e.rss = 3.2e9;
    e.t = 1714567892.25;
    return e;
}

SpanEvent fullSpan() {
    SpanEvent e;
    e.rank = 3;
    e.stage = 1;
    e.step = 42;
    e.microbatch = 6;
    e.kind = "B";
    e.start = 1714567893.000125;
    e.end = 1714567893.004375;
    return e;
}

CommEvent fullComm() {
    CommEvent e;
    e.rank = 2;
    e.collectives = 18000;
    e.bytes = 1LL << 42;
    e.last_seq = 17999;
    e.t = 1714567894.0;
    return e;
}

CheckpointEvent fullCheckpoint() {
    CheckpointEvent e;
    e.step = 1000;
    e.path = "/data/runs/7/checkpoints/step-1000";
    e.bytes = 5368709120;
    e.ms = 2345.5;
    e.layout = "dp2.tp2.pp2.z1";
    e.t = 1714567895.5;
    return e;
}

LogEvent fullLog() {
    LogEvent e;
    e.rank = 1;
    e.level = "warn";
    e.message = "line one\nline two\ttabbed \"quoted\" back\\slash \x01 ctrl \xE2\x82\xAC";
    e.t = 1714567896.75;
    return e;
}

RunEndEvent fullRunEnd() {
    RunEndEvent e;
    e.status = "stopped";
    e.reason = "stop requested (SIGTERM)";
    e.step = 1500;
    e.t = 1714567897.0;
    return e;
}

template <class E>
E roundTrip(const E& in) {
    const std::string line = encodeEvent(in);
    EXPECT_EQ(line.find('\n'), std::string::npos);
    EXPECT_EQ(line.rfind(std::string(kTelemetryPrefix), 0), 0u);
    const DecodedLine d = decodeLine(line);
    EXPECT_EQ(d.kind, DecodedLine::Kind::Event) << d.error << "\n" << line;
    EXPECT_EQ(d.version, kTelemetryVersion);
    const E* out = std::get_if<E>(&d.event);
    EXPECT_NE(out, nullptr) << line;
    return out ? *out : E{};
}

nlohmann::json jsonOf(const std::string& line) {
    return nlohmann::json::parse(line.substr(kTelemetryPrefix.size()));
}

std::set<std::string> keysOf(const nlohmann::json& j) {
    std::set<std::string> keys;
    for (auto it = j.begin(); it != j.end(); ++it)
        keys.insert(it.key());
    return keys;
}

DecodedLine decode(const std::string& body) { return decodeLine(std::string(kTelemetryPrefix) + body); }

} // namespace

TEST(TelemetryCodec, RunStartRoundTrip) {
    const RunStartEvent in = fullRunStart();
    const RunStartEvent out = roundTrip(in);
    EXPECT_EQ(out.world, in.world);
    EXPECT_EQ(out.dp, in.dp);
    EXPECT_EQ(out.tp, in.tp);
    EXPECT_EQ(out.pp, in.pp);
    EXPECT_EQ(out.zero, in.zero);
    EXPECT_EQ(out.schedule, in.schedule);
    EXPECT_EQ(out.params, in.params);
    EXPECT_EQ(out.flops_per_token, in.flops_per_token);
    EXPECT_EQ(out.peak_flops, in.peak_flops);
    EXPECT_EQ(out.device, in.device);
    EXPECT_EQ(out.hosts, in.hosts);
    EXPECT_EQ(out.devices, in.devices);
    EXPECT_EQ(out.clock_offsets, in.clock_offsets);
    EXPECT_EQ(out.pids, in.pids);
    EXPECT_EQ(out.start_step, in.start_step);
    EXPECT_EQ(out.t, in.t);
}

TEST(TelemetryCodec, StepRoundTrip) {
    const StepEvent in = fullStep();
    const StepEvent out = roundTrip(in);
    EXPECT_EQ(out.step, in.step);
    EXPECT_EQ(out.loss, in.loss);
    EXPECT_EQ(out.lr, in.lr);
    EXPECT_EQ(out.grad_norm, in.grad_norm);
    EXPECT_EQ(out.tokens_per_s, in.tokens_per_s);
    EXPECT_EQ(out.samples_per_s, in.samples_per_s);
    EXPECT_EQ(out.step_ms, in.step_ms);
    EXPECT_EQ(out.step_ms_min, in.step_ms_min);
    EXPECT_EQ(out.step_ms_max, in.step_ms_max);
    EXPECT_EQ(out.slowest_rank, in.slowest_rank);
    EXPECT_EQ(out.mfu, in.mfu);
    EXPECT_EQ(out.tokens, in.tokens);
    EXPECT_EQ(out.peak_mem, in.peak_mem);
    EXPECT_EQ(out.t, in.t);
}

TEST(TelemetryCodec, DeviceRoundTrip) {
    const DeviceEvent in = fullDevice();
    const DeviceEvent out = roundTrip(in);
    EXPECT_EQ(out.rank, in.rank);
    EXPECT_EQ(out.host, in.host);
    EXPECT_EQ(out.device, in.device);
    EXPECT_EQ(out.util, in.util);
    EXPECT_EQ(out.mem_used, in.mem_used);
    EXPECT_EQ(out.mem_total, in.mem_total);
    EXPECT_EQ(out.power_w, in.power_w);
    EXPECT_EQ(out.temp_c, in.temp_c);
    EXPECT_EQ(out.sm_clock_mhz, in.sm_clock_mhz);
    EXPECT_EQ(out.cpu_pct, in.cpu_pct);
    EXPECT_EQ(out.rss, in.rss);
    EXPECT_EQ(out.t, in.t);
}

TEST(TelemetryCodec, SpanRoundTrip) {
    const SpanEvent in = fullSpan();
    const SpanEvent out = roundTrip(in);
    EXPECT_EQ(out.rank, in.rank);
    EXPECT_EQ(out.stage, in.stage);
    EXPECT_EQ(out.step, in.step);
    EXPECT_EQ(out.microbatch, in.microbatch);
    EXPECT_EQ(out.kind, in.kind);
    EXPECT_EQ(out.start, in.start);
    EXPECT_EQ(out.end, in.end);
}

TEST(TelemetryCodec, CommRoundTrip) {
    const CommEvent in = fullComm();
    const CommEvent out = roundTrip(in);
    EXPECT_EQ(out.rank, in.rank);
    EXPECT_EQ(out.collectives, in.collectives);
    EXPECT_EQ(out.bytes, in.bytes);
    EXPECT_EQ(out.last_seq, in.last_seq);
    EXPECT_EQ(out.t, in.t);
}

TEST(TelemetryCodec, CheckpointRoundTrip) {
    const CheckpointEvent in = fullCheckpoint();
    const CheckpointEvent out = roundTrip(in);
    EXPECT_EQ(out.step, in.step);
    EXPECT_EQ(out.path, in.path);
    EXPECT_EQ(out.bytes, in.bytes);
    EXPECT_EQ(out.ms, in.ms);
    EXPECT_EQ(out.layout, in.layout);
    EXPECT_EQ(out.t, in.t);
}

TEST(TelemetryCodec, LogRoundTrip) {
    const LogEvent in = fullLog();
    const LogEvent out = roundTrip(in);
    EXPECT_EQ(out.rank, in.rank);
    EXPECT_EQ(out.level, in.level);
    EXPECT_EQ(out.message, in.message);
    EXPECT_EQ(out.t, in.t);
}

TEST(TelemetryCodec, RunEndRoundTrip) {
    const RunEndEvent in = fullRunEnd();
    const RunEndEvent out = roundTrip(in);
    EXPECT_EQ(out.status, in.status);
    EXPECT_EQ(out.reason, in.reason);
    EXPECT_EQ(out.step, in.step);
    EXPECT_EQ(out.t, in.t);
}

TEST(TelemetryCodec, LinesAreStandardJsonWithMemberNamesAsKeys) {
    const std::string step = encodeEvent(fullStep());
    const nlohmann::json j = jsonOf(step);
    EXPECT_EQ(j.at("ev"), "step");
    EXPECT_EQ(j.at("v"), kTelemetryVersion);
    EXPECT_EQ(keysOf(j), (std::set<std::string>{"ev", "v", "step", "loss", "lr", "grad_norm", "tokens_per_s",
                                                 "samples_per_s", "step_ms", "step_ms_min", "step_ms_max",
                                                 "slowest_rank", "mfu", "tokens", "peak_mem", "t"}));
    EXPECT_EQ(j.at("tokens").get<int64_t>(), fullStep().tokens);

    const nlohmann::json rs = jsonOf(encodeEvent(fullRunStart()));
    EXPECT_EQ(keysOf(rs), (std::set<std::string>{"ev", "v", "world", "dp", "tp", "pp", "zero", "schedule",
                                                  "params", "flops_per_token", "peak_flops", "device", "hosts",
                                                  "devices", "clock_offsets", "pids", "slurm_job", "slurm_nodes",
                                                  "start_step", "t"}));
    EXPECT_EQ(rs.at("hosts").get<std::vector<std::string>>(), fullRunStart().hosts);
    EXPECT_EQ(jsonOf(encodeEvent(fullLog())).at("message").get<std::string>(), fullLog().message);

    const std::vector<std::pair<TelemetryEvent, std::string>> names = {
        {fullRunStart(), "run_start"}, {fullStep(), "step"},   {fullDevice(), "device"},
        {fullSpan(), "span"},          {fullComm(), "comm"},   {fullCheckpoint(), "checkpoint"},
        {fullLog(), "log"},            {fullRunEnd(), "run_end"}};
    for (const auto& [event, name] : names) {
        EXPECT_EQ(eventName(event), name);
        EXPECT_EQ(jsonOf(encodeEvent(event)).at("ev"), name);
    }
}

TEST(TelemetryCodec, NonFiniteNumbersSurvive) {
    StepEvent in = fullStep();
    in.loss = std::numeric_limits<double>::quiet_NaN();
    in.grad_norm = std::numeric_limits<double>::infinity();
    in.lr = -std::numeric_limits<double>::infinity();
    const std::string line = encodeEvent(in);
    EXPECT_NO_THROW(jsonOf(line)); // still standard JSON
    const StepEvent out = roundTrip(in);
    EXPECT_TRUE(std::isnan(out.loss));
    EXPECT_TRUE(std::isinf(out.grad_norm) && out.grad_norm > 0);
    EXPECT_TRUE(std::isinf(out.lr) && out.lr < 0);

    // Python's json.dumps writes bare tokens.
    const DecodedLine py = decode(R"({"ev":"step","v":1,"step":3,"loss":NaN,"grad_norm":-Infinity})");
    ASSERT_EQ(py.kind, DecodedLine::Kind::Event) << py.error;
    EXPECT_TRUE(std::isnan(std::get<StepEvent>(py.event).loss));
    EXPECT_TRUE(std::isinf(std::get<StepEvent>(py.event).grad_norm));
}

TEST(TelemetryCodec, LinesWithoutThePrefixAreText) {
    for (const char* text : {"", "hello world", "@plx", "@plx{\"ev\":\"step\"}", " @plx {\"ev\":\"step\",\"v\":1,\"step\":1}",
                             "NCCL INFO Bootstrap : Using eth0", "{\"ev\":\"step\",\"v\":1,\"step\":1}"}) {
        const DecodedLine d = decodeLine(text);
        EXPECT_EQ(d.kind, DecodedLine::Kind::Text) << text;
        EXPECT_TRUE(d.error.empty());
    }
}

TEST(TelemetryCodec, UnknownFieldsAndNewerVersionsDecodeTheKnownFields) {
    const DecodedLine d = decode(
        R"({"v":7,"extra":{"nested":[1,2,{"x":null}]},"step":5,"future_metric":1e300,"loss":1.5,"ev":"step","t":2})");
    ASSERT_EQ(d.kind, DecodedLine::Kind::Event) << d.error;
    EXPECT_EQ(d.version, 7);
    const StepEvent& s = std::get<StepEvent>(d.event);
    EXPECT_EQ(s.step, 5);
    EXPECT_EQ(s.loss, 1.5);
    EXPECT_EQ(s.t, 2.0);
    EXPECT_EQ(s.lr, 0.0); // absent: the default
}

TEST(TelemetryCodec, AbsentOptionalFieldsKeepTheirDefaults) {
    const DecodedLine d = decode(R"({"ev":"device","v":1,"rank":2})");
    ASSERT_EQ(d.kind, DecodedLine::Kind::Event) << d.error;
    const DeviceEvent& e = std::get<DeviceEvent>(d.event);
    EXPECT_EQ(e.rank, 2);
    EXPECT_EQ(e.device, -1);
    EXPECT_EQ(e.util, -1);
    const DecodedLine log = decode(R"({"ev":"log","v":1,"message":"hi"})");
    ASSERT_EQ(log.kind, DecodedLine::Kind::Event);
    EXPECT_EQ(std::get<LogEvent>(log.event).level, "info");
    EXPECT_EQ(std::get<LogEvent>(log.event).rank, -1);
}

TEST(TelemetryCodec, IntegersWrittenAsWholeFloatsAreAccepted) {
    const DecodedLine d = decode(R"({"ev":"span","v":1.0,"rank":1.0,"step":3e1,"kind":"F","start":1,"end":2})");
    ASSERT_EQ(d.kind, DecodedLine::Kind::Event) << d.error;
    EXPECT_EQ(std::get<SpanEvent>(d.event).step, 30);
    EXPECT_EQ(std::get<SpanEvent>(d.event).rank, 1);
}

TEST(TelemetryCodec, MalformedLinesSayWhy) {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"", "nothing after the prefix"},
        {"[1,2]", "expected a JSON object"},
        {R"({"ev":"step","v":1,"step":1)", "truncated"},
        {R"({"ev":"step","v":1,"step":1,"loss":)", "truncated"},
        {R"({"ev":"step","v":1,"step":1,"loss":"x)", "truncated"},
        {R"({"ev":"step","v":1,"step":1} trailing)", "trailing characters"},
        {R"({"ev":"step","v":1,"step":"one"})", "field \"step\" must be an integer (got a string)"},
        {R"({"ev":"step","v":1,"step":1.5})", "field \"step\" must be an integer (got a fraction)"},
        {R"({"ev":"step","v":1,"step":99999999999999999999})", "field \"step\" is out of range"},
        {R"({"ev":"device","v":1,"rank":4294967296})", "field \"rank\" is out of range"},
        {R"({"ev":"step","v":1,"step":1,"loss":true})", "field \"loss\" must be a number (got a boolean)"},
        {R"({"ev":"step","v":1,"step":1,"loss":"fast"})", "field \"loss\" must be a number (got a string)"},
        {R"({"ev":"device","v":1,"rank":1,"host":42})", "field \"host\" must be a string (got a number)"},
        {R"({"ev":"run_start","v":1,"world":2,"hosts":"a,b"})", "field \"hosts\" must be an array"},
        {R"({"ev":"run_start","v":1,"world":2,"hosts":["a",3]})", "array of strings"},
        {R"({"ev":"run_start","v":1,"world":2,"pids":[1,2.5]})", "array of integers"},
        {R"({"ev":"run_start","v":1,"world":2,"clock_offsets":[0,"x"]})", "array of numbers"},
        {R"({"ev":"warp","v":1})", "unknown event \"warp\""},
        {R"({"ev":7,"v":1})", "\"ev\" must be a string"},
        {R"({"v":1,"step":1})", "missing \"ev\""},
        {R"({"ev":"step","step":1})", "missing \"v\""},
        {R"({"ev":"step","v":0,"step":1})", "\"v\" must be a positive integer"},
        {R"({"ev":"step","v":"1","step":1})", "\"v\" must be a positive integer"},
        {R"({"ev":"step","v":1})", "step: missing required field \"step\""},
        {R"({"ev":"span","v":1,"rank":0,"step":1,"kind":"F","start":1})", "span: missing required field \"end\""},
        {R"({"ev":"log","v":1,"level":"info"})", "log: missing required field \"message\""},
        {R"({"ev":"run_end","v":1,"status":"exploded"})", "status must be succeeded, failed or stopped"},
        {R"({"ev":"step","v":1,"step":1,"loss":1.})", "bad JSON"},
        {R"({"ev":"step",,"v":1})", "bad JSON"},
        {R"({ev:"step","v":1})", "bad JSON"},
    };
    for (const auto& [body, why] : cases) {
        const DecodedLine d = decode(body);
        EXPECT_EQ(d.kind, DecodedLine::Kind::Malformed) << body;
        EXPECT_NE(d.error.find(why), std::string::npos) << body << " -> " << d.error;
    }
}

TEST(TelemetryCodec, ReusingOneDecodedLineResetsFields) {
    DecodedLine d;
    decodeLine(encodeEvent(fullStep()), d);
    ASSERT_EQ(d.kind, DecodedLine::Kind::Event);
    decodeLine(std::string(kTelemetryPrefix) + R"({"ev":"step","v":1,"step":9})", d);
    ASSERT_EQ(d.kind, DecodedLine::Kind::Event);
    EXPECT_EQ(std::get<StepEvent>(d.event).step, 9);
    EXPECT_EQ(std::get<StepEvent>(d.event).loss, 0.0); // not the previous line's loss
    decodeLine(std::string(kTelemetryPrefix) + "{", d);
    EXPECT_EQ(d.kind, DecodedLine::Kind::Malformed);
    decodeLine("plain", d);
    EXPECT_EQ(d.kind, DecodedLine::Kind::Text);
    EXPECT_TRUE(d.error.empty());
    decodeLine(encodeEvent(fullDevice()), d);
    ASSERT_EQ(d.kind, DecodedLine::Kind::Event);
    EXPECT_EQ(std::get<DeviceEvent>(d.event).host, "gpu-node-17");
}

TEST(TelemetryCodec, AppendEventReusesABuffer) {
    std::string buffer = "prefix|";
    appendEvent(buffer, fullComm());
    EXPECT_EQ(buffer, "prefix|" + encodeEvent(fullComm()));
}
