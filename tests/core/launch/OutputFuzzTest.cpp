#include "core/launch/OutputDemux.h"
#include "core/launch/Utf8.h"
#include "core/telemetry/TelemetryCodec.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

using namespace parallax;

namespace {

std::vector<std::string> validLines() {
    RunStartEvent rs;
    rs.world = 2;
    rs.hosts = {"a", "b"};
    rs.devices = {"cpu", "cpu"};
    rs.clock_offsets = {0, 1e-5};
    StepEvent st;
    st.step = 10;
    st.loss = 2.5;
    DeviceEvent dv;
    dv.rank = 1;
    dv.host = "node";
    SpanEvent sp;
    sp.rank = 1;
    sp.kind = "F";
    sp.start = 1;
    sp.end = 2;
    CommEvent cm;
    CheckpointEvent ck;
    ck.path = "/x";
    LogEvent lg;
    lg.message = "hello \"world\"\n";
    RunEndEvent re;
    re.status = "succeeded";
    std::vector<std::string> lines;
    for (const TelemetryEvent& e : std::vector<TelemetryEvent>{rs, st, dv, sp, cm, ck, lg, re})
        lines.push_back(encodeEvent(e));
    lines.push_back("plain log line");
    lines.push_back("");
    return lines;
}

class Mutator {
public:
    explicit Mutator(uint32_t seed) : m_rng(seed) {}

    std::string next(const std::vector<std::string>& corpus) {
        std::string s = corpus[pick(corpus.size())];
        const int kind = static_cast<int>(pick(12));
        switch (kind) {
        case 0: // byte flips
            for (size_t i = 0, n = 1 + pick(4); i < n && !s.empty(); ++i)
                s[pick(s.size())] ^= static_cast<char>(1 + pick(255));
            break;
        case 1: // truncation
            s.resize(pick(s.size() + 1));
            break;
        case 2: // deleted quotes
            for (size_t at = s.find('"'); at != std::string::npos; at = s.find('"', at))
                if (pick(3) == 0)
                    s.erase(at, 1);
                else
                    ++at;
            break;
        case 3: { // huge numbers
            const char* huge[] = {"99999999999999999999999999", "1e999", "-1e999", "1e-999", "18446744073709551616",
                                  "-9223372036854775809", "123456789012345678901234567890.5"};
            const size_t colon = s.find(':', pick(s.size() + 1));
            if (colon != std::string::npos)
                s.insert(colon + 1, huge[pick(7)]);
            break;
        }
        case 4: { // NaN text
            const char* nan[] = {"NaN", "nan", "Infinity", "-Infinity", "\"NaN\"", "NAN", "inf", "null"};
            const size_t colon = s.find(':', pick(s.size() + 1));
            if (colon != std::string::npos)
                s.replace(colon + 1, std::min<size_t>(3, s.size() - colon - 1), nan[pick(8)]);
            break;
        }
        case 5: { // nested junk
            std::string junk;
            const size_t depth = pick(200);
            for (size_t i = 0; i < depth; ++i)
                junk += pick(2) ? "[" : "{\"k\":";
            const size_t at = s.find(',');
            s.insert(at == std::string::npos ? s.size() : at + 1, "\"junk\":" + junk);
            break;
        }
        case 6: { // binary
            s = std::string(kTelemetryPrefix);
            for (size_t i = 0, n = pick(300); i < n; ++i)
                s.push_back(static_cast<char>(pick(256)));
            break;
        }
        case 7:
            s.clear();
            break;
        case 8: { // very long
            const size_t at = s.find("\"hello");
            const std::string filler(1000 + pick(200000), static_cast<char>('a' + pick(26)));
            if (at != std::string::npos)
                s.insert(at + 1, filler);
            else
                s += filler;
            break;
        }
        case 9: // a tag or label at a random place
            s.insert(pick(s.size() + 1), pick(2) ? "[1," + std::to_string(pick(5)) + "]<stdout>:" : " 3: ");
            break;
        case 10: // duplicated and spliced halves
        {
            const std::string& other = corpus[pick(corpus.size())];
            s = s.substr(0, pick(s.size() + 1)) + other.substr(pick(other.size() + 1));
        }
            break;
        default: // unchanged
            break;
        }
        // Most lines arrive tagged by the launcher.
        if (pick(4) != 0)
            s = "[1," + std::to_string(pick(4)) + "]<" + (pick(2) ? "stdout" : "stderr") + ">:" + s;
        return s;
    }

private:
    size_t pick(size_t n) { return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(m_rng); }
    std::mt19937 m_rng;
};

} // namespace

// 100,000 random and mutated lines through the demultiplexer and the decoder: nothing crashes,
// every line gets a class, malformed lines say why, and text lines are exactly those without the
// prefix.
TEST(OutputFuzz, EveryLineIsClassified) {
    const std::vector<std::string> corpus = validLines();
    Mutator mutate(20240501);
    OutputDemux openMpi(LauncherFormat::OpenMpi);
    OutputDemux slurm(LauncherFormat::Slurm);
    size_t counts[3] = {0, 0, 0};
    size_t demuxed = 0;
    DecodedLine reused;
    auto check = [&](const DemuxedLine& d) {
        ++demuxed;
        ASSERT_GE(d.rank, -1);
        ASSERT_TRUE(d.stream == OutputStream::Stdout || d.stream == OutputStream::Stderr);
        const DecodedLine decoded = decodeLine(d.payload);
        decodeLine(d.payload, reused);
        ASSERT_EQ(decoded.kind, reused.kind);
        ASSERT_EQ(decoded.error, reused.error);
        const bool prefixed = d.payload.substr(0, kTelemetryPrefix.size()) == kTelemetryPrefix;
        switch (decoded.kind) {
        case DecodedLine::Kind::Text:
            ASSERT_FALSE(prefixed);
            ASSERT_TRUE(decoded.error.empty());
            break;
        case DecodedLine::Kind::Malformed:
            ASSERT_TRUE(prefixed);
            ASSERT_FALSE(decoded.error.empty());
            break;
        case DecodedLine::Kind::Event:
            ASSERT_TRUE(prefixed);
            ASSERT_GE(decoded.version, 1);
            // What decodes, encodes again to a line that decodes to the same event type.
            ASSERT_EQ(decodeLine(encodeEvent(decoded.event)).event.index(), decoded.event.index());
            break;
        }
        ++counts[static_cast<int>(decoded.kind)];
    };
    for (int i = 0; i < 100000; ++i) {
        std::string line = mutate.next(corpus);
        // The supervisor cleans bytes before demultiplexing; the decoder must also cope without.
        const DecodedLine raw = decodeLine(line);
        ASSERT_TRUE(raw.kind != DecodedLine::Kind::Malformed || !raw.error.empty());
        const std::string clean = isCleanUtf8(line) ? line : sanitizeUtf8(line);
        ASSERT_TRUE(isCleanUtf8(clean));
        const OutputStream pipe = i % 3 == 0 ? OutputStream::Stderr : OutputStream::Stdout;
        openMpi.feed(pipe, clean, check);
        slurm.feed(pipe, clean, check);
        if (HasFatalFailure())
            return;
    }
    openMpi.finish(check);
    slurm.finish(check);
    EXPECT_GE(demuxed, 190000u);
    // The mutations leave a real mix of all three classes.
    EXPECT_GT(counts[static_cast<int>(DecodedLine::Kind::Event)], 10000u);
    EXPECT_GT(counts[static_cast<int>(DecodedLine::Kind::Text)], 10000u);
    EXPECT_GT(counts[static_cast<int>(DecodedLine::Kind::Malformed)], 10000u);
}
