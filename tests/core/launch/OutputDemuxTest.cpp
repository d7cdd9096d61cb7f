#include "core/launch/OutputDemux.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace parallax;

namespace {

struct Line {
    int rank;
    OutputStream stream;
    std::string payload;
    bool operator==(const Line& o) const { return rank == o.rank && stream == o.stream && payload == o.payload; }
};

std::ostream& operator<<(std::ostream& os, const Line& l) {
    return os << "{" << l.rank << ", " << streamName(l.stream) << ", \"" << l.payload.substr(0, 60) << "\" ("
              << l.payload.size() << " bytes)}";
}

struct Collector {
    std::vector<Line> lines;
    OutputDemux::Sink sink() {
        return [this](const DemuxedLine& d) { lines.push_back({d.rank, d.stream, std::string(d.payload)}); };
    }
};

constexpr auto Out = OutputStream::Stdout;
constexpr auto Err = OutputStream::Stderr;

} // namespace

TEST(OutputDemux, OpenMpiTags) {
    OutputDemux demux(LauncherFormat::OpenMpi);
    Collector c;
    demux.feed(Out, "[1,3]<stdout>:@plx {\"ev\":\"step\"}", c.sink());
    demux.feed(Err, "[1,0]<stderr>:Traceback (most recent call last):", c.sink());
    demux.feed(Err, "[1,12]<stddiag>:diagnostic", c.sink());
    demux.feed(Out, "[1,1]<stdout>:", c.sink());
    demux.feed(Out, "[1,1]<stdout>:  indented: [1,2] list", c.sink());
    demux.feed(Err, "mpirun: Forwarding signal 10 to job", c.sink());
    demux.feed(Out, "[1,x]<stdout>:not a tag", c.sink());
    demux.finish(c.sink());
    const std::vector<Line> expected = {
        {3, Out, "@plx {\"ev\":\"step\"}"},
        {0, Err, "Traceback (most recent call last):"},
        {12, Err, "diagnostic"},
        {1, Out, ""},
        {1, Out, "  indented: [1,2] list"},
        {-1, Err, "mpirun: Forwarding signal 10 to job"},
        {-1, Out, "[1,x]<stdout>:not a tag"},
    };
    EXPECT_EQ(c.lines, expected);
}

TEST(OutputDemux, SlurmLabels) {
    OutputDemux demux(LauncherFormat::Slurm);
    Collector c;
    demux.feed(Out, "  3: payload with: colon", c.sink());
    demux.feed(Err, "12: on stderr", c.sink());
    demux.feed(Out, "0:", c.sink());
    demux.feed(Err, "srun: error: node7: task 3: Killed", c.sink());
    demux.feed(Out, "1. not a label", c.sink());
    demux.finish(c.sink());
    const std::vector<Line> expected = {
        {3, Out, "payload with: colon"},
        {12, Err, "on stderr"},
        {0, Out, ""},
        {-1, Err, "srun: error: node7: task 3: Killed"},
        {-1, Out, "1. not a label"},
    };
    EXPECT_EQ(c.lines, expected);
    ASSERT_TRUE(demux.failure());
    EXPECT_EQ(demux.failure()->rank, 3);
    EXPECT_EQ(demux.failure()->signal, 9);
    EXPECT_EQ(demux.failure()->host, "node7");
}

TEST(OutputDemux, SlurmLabelsAreNotTagsForOpenMpi) {
    const DemuxedLine d = OutputDemux::parseLine(LauncherFormat::OpenMpi, Out, "  3: text");
    EXPECT_EQ(d.rank, -1);
    EXPECT_EQ(d.payload, "  3: text");
    const DemuxedLine s = OutputDemux::parseLine(LauncherFormat::Slurm, Err, "  3: text");
    EXPECT_EQ(s.rank, 3);
    EXPECT_EQ(s.stream, Err);
    EXPECT_EQ(s.payload, "text");
}

// Open MPI 4.1.4 forwards output in chunks of up to 4095 bytes, each tagged, without a newline
// between chunks; chunks of different ranks interleave. Captured from
//   mpirun --tag-output -np 2 python3 -c '...write("@plx " + "x"*200000 + "END\n")...'
TEST(OutputDemux, ReassemblesChunkedLongLines) {
    const std::string long0 = "@plx " + std::string(9000, 'a') + "END0";
    const std::string long1 = "@plx " + std::string(9000, 'b') + "END1";
    auto chunks = [](const std::string& s) {
        std::vector<std::string> out;
        for (size_t at = 0; at < s.size(); at += 4095)
            out.push_back(s.substr(at, 4095));
        return out;
    };
    const std::vector<std::string> c0 = chunks(long0);
    const std::vector<std::string> c1 = chunks(long1);
    ASSERT_EQ(c0.size(), 3u);
    // Pipe lines as mpirun writes them: newlines only where a rank's line ended.
    const std::string pipeLine1 = "[1,1]<stdout>:" + c1[0] + "[1,0]<stdout>:" + c0[0] + "[1,1]<stdout>:" + c1[1] +
                                  "[1,0]<stdout>:" + c0[1] + "[1,0]<stdout>:" + c0[2];
    const std::string pipeLine2 = "[1,1]<stdout>:" + c1[2];
    OutputDemux demux(LauncherFormat::OpenMpi);
    Collector c;
    demux.feed(Out, pipeLine1, c.sink());
    demux.feed(Out, pipeLine2, c.sink());
    demux.finish(c.sink());
    const std::vector<Line> expected = {{0, Out, long0}, {1, Out, long1}};
    EXPECT_EQ(c.lines, expected);
}

// A rank that writes part of a line and pauses: "[1,1]<stdout>:partial[1,0]<stdout>:line\n" and
// later "[1,1]<stdout>: continued\n" (captured the same way).
TEST(OutputDemux, ReassemblesPausedPartialLines) {
    OutputDemux demux(LauncherFormat::OpenMpi);
    Collector c;
    demux.feed(Out, "[1,1]<stdout>:partial[1,0]<stdout>:rank 0 line", c.sink());
    demux.feed(Err, "[1,1]<stderr>:stderr is separate", c.sink());
    demux.feed(Out, "[1,1]<stdout>: continued", c.sink());
    demux.feed(Out, "[1,0]<stdout>:no newline at end", c.sink()); // the launcher added none either
    demux.feed(Out, "[1,1]<stdout>:tail without newline[1,0]<stdout>:x", c.sink());
    demux.finish(c.sink());
    const std::vector<Line> expected = {
        {0, Out, "rank 0 line"},
        {1, Err, "stderr is separate"},
        {1, Out, "partial continued"},
        {0, Out, "no newline at end"},
        {0, Out, "x"},
        {1, Out, "tail without newline"},
    };
    EXPECT_EQ(c.lines, expected);
}

TEST(OutputDemux, CapsRankLines) {
    OutputDemux demux(LauncherFormat::OpenMpi);
    Collector c;
    const std::string chunk(4 * 1024 * 1024, 'z');
    for (int i = 0; i < 5; ++i)
        demux.feed(Out, "[1,0]<stdout>:" + chunk + "[1,1]<stdout>:y", c.sink());
    demux.feed(Out, "[1,0]<stdout>:end", c.sink());
    demux.finish(c.sink());
    ASSERT_EQ(c.lines.size(), 6u);
    EXPECT_EQ(c.lines[0].rank, 1);
    EXPECT_EQ(c.lines[4].rank, 1);
    EXPECT_EQ(c.lines[5].rank, 0);
    EXPECT_EQ(c.lines[5].payload.size(), OutputDemux::kMaxLine);
}

TEST(OutputDemux, TagParsing) {
    const auto t = OutputDemux::parseOpenMpiTag("[12,345]<stderr>:x");
    ASSERT_TRUE(t);
    EXPECT_EQ(t->rank, 345);
    EXPECT_EQ(t->stream, Err);
    EXPECT_EQ(t->length, 17u);
    EXPECT_FALSE(OutputDemux::parseOpenMpiTag("[1,2]<stdin>:x"));
    EXPECT_FALSE(OutputDemux::parseOpenMpiTag("[1,99999999999]<stdout>:x"));
    EXPECT_FALSE(OutputDemux::parseOpenMpiTag("[1,2]<stdout>"));
    EXPECT_FALSE(OutputDemux::parseOpenMpiTag("[,2]<stdout>:"));
    const auto s = OutputDemux::parseSlurmLabel("   7: x");
    ASSERT_TRUE(s);
    EXPECT_EQ(s->rank, 7);
    EXPECT_EQ(s->length, 6u);
    EXPECT_FALSE(OutputDemux::parseSlurmLabel("x7: x"));
    EXPECT_FALSE(OutputDemux::parseSlurmLabel("   : x"));
}
