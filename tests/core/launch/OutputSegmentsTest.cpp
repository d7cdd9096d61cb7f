// The raw output in segments (retention.output_segment_mb): the real writer closes a segment at its
// size and goes on in the next; every reader reads them in order as one stream, also while they
// are written and after the oldest were removed.
#include "core/launch/OutputImport.h"
#include "core/launch/PrivateFile.h"
#include "core/launch/RawOutput.h"
#include "core/telemetry/TelemetryCodec.h"

#include "tests/core/launch/RunFolderFixture.h"
#include "tests/support/Process.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

namespace parallax {
namespace {

namespace fs = std::filesystem;

using Scratch = parallax::testing::TempDir;

std::string stepLine(int64_t step) {
    StepEvent e;
    e.step = step;
    e.loss = 1.0 / static_cast<double>(step + 1);
    e.grad_norm = 0.5 + static_cast<double>((step * 7919) % 1000) / 997.0;
    e.t = 1000 + static_cast<double>(step) * 1.37;
    return "[1," + std::to_string(step % 8) + "]<stdout>:" + encodeEvent(e) + "\n";
}

// A writer of segments of `segmentBytes` compressed bytes into `runDir`, as the supervisor makes it.
struct SegmentedOutput {
    std::string runDir;
    std::FILE* first;
    RawOutputWriter writer;
    std::string written;

    SegmentedOutput(const std::string& dir, int64_t segmentBytes)
        : runDir(dir), first(createPrivateFile(rawOutputSegmentPath(dir, 0))), writer(first) {
        writer.setSegments(runDir, segmentBytes);
    }
    ~SegmentedOutput() { std::fclose(first); }

    // Lines [from, to), flushed every 50 lines as the supervisor flushes every second.
    void lines(int64_t from, int64_t to) {
        for (int64_t s = from; s < to; ++s) {
            const std::string line = stepLine(s);
            ASSERT_TRUE(writer.write(line.data(), line.size()));
            written += line;
            if ((s + 1) % 50 == 0) ASSERT_TRUE(writer.flush());
        }
        ASSERT_TRUE(writer.flush());
    }
};

std::string readAll(RawOutputReader& in) {
    std::string text;
    char buf[4096];
    for (size_t got; (got = in.read(buf, sizeof buf)) > 0;) text.append(buf, got);
    return text;
}

TEST(OutputSegments, TheWriterClosesASegmentAtItsSizeAndTheReadersReadThemAllInOrder) {
    Scratch dir;
    SegmentedOutput out(dir.path(), 4096);
    out.lines(0, 2000);
    ASSERT_TRUE(out.writer.finish());

    const std::vector<RawOutputWriter::Segment>& segments = out.writer.segments();
    ASSERT_GE(segments.size(), 4u) << out.writer.bytesOut() << " compressed bytes";
    const std::vector<RawOutputSegmentFile> files = rawOutputSegments(dir.path());
    ASSERT_EQ(files.size(), segments.size());
    int64_t compressed = 0;
    for (size_t i = 0; i < segments.size(); ++i) {
        SCOPED_TRACE(i);
        EXPECT_EQ(files[i].index, static_cast<int>(i));
        EXPECT_EQ(files[i].path, dir.path() + (i == 0 ? "/output.log.gz" : "/output." + std::to_string(i) + ".log.gz"));
        EXPECT_EQ(segments[i].path, files[i].path);
        EXPECT_EQ(static_cast<int64_t>(fs::file_size(files[i].path)), segments[i].compressed);
        compressed += segments[i].compressed;
        // Each closed segment is closed at its size (plus what the flush that passed it added).
        if (i + 1 < segments.size()) EXPECT_GE(segments[i].compressed, 4096);
        // They follow each other without a gap, and each header says where it starts.
        EXPECT_EQ(segments[i].from, i == 0 ? 0 : segments[i - 1].to);
        EXPECT_EQ(rawOutputSegmentStart(files[i].path), segments[i].from);
        // A segment opened alone reads from its own start to the stream's end.
        RawOutputReader alone(files[i].path);
        EXPECT_EQ(alone.position(), segments[i].from);
        EXPECT_EQ(readAll(alone), out.written.substr(static_cast<size_t>(segments[i].from)));
    }
    EXPECT_EQ(compressed, out.writer.bytesOut());
    EXPECT_EQ(segments.back().to, static_cast<int64_t>(out.written.size()));
    // The run folder's output: every byte, in order.
    EXPECT_EQ(rawOutputFile(dir.path()), dir.path() + "/output.log.gz");
    EXPECT_EQ(readRawOutput(rawOutputFile(dir.path())), out.written);
}

TEST(OutputSegments, AReaderFollowsTheOutputAcrossSegmentsAsItIsWritten) {
    Scratch dir;
    SegmentedOutput out(dir.path(), 2048);
    out.lines(0, 100);
    RawOutputReader follower(rawOutputPath(dir.path()));
    std::string read = readAll(follower);
    EXPECT_EQ(read, out.written);
    for (int64_t round = 1; round < 8; ++round) {
        out.lines(round * 300, round * 300 + 300);
        read += readAll(follower);
        ASSERT_EQ(read.size(), out.written.size()) << "round " << round;
    }
    EXPECT_EQ(read, out.written);
    EXPECT_GE(out.writer.segments().size(), 4u);
    EXPECT_EQ(follower.position(), static_cast<int64_t>(out.written.size()));
    EXPECT_TRUE(follower.error().empty()) << follower.error();
}

TEST(OutputSegments, AfterTheOldestAreRemovedTheStreamStartsAtTheFirstLeft) {
    Scratch dir;
    SegmentedOutput out(dir.path(), 4096);
    out.lines(0, 1500);
    ASSERT_GE(out.writer.segments().size(), 3u);
    const RawOutputWriter::Segment second = out.writer.segments()[1];
    ASSERT_EQ(std::remove(out.writer.segments()[0].path.c_str()), 0);
    out.writer.forgetOldestSegment();

    EXPECT_EQ(rawOutputFile(dir.path()), second.path);
    RawOutputReader in(rawOutputFile(dir.path()));
    EXPECT_EQ(in.position(), second.from);
    EXPECT_FALSE(in.seek(0)); // removed: the reader stays where the stream starts now
    EXPECT_EQ(in.position(), second.from);
    const int64_t later = second.from + 1000;
    ASSERT_TRUE(in.seek(later));
    EXPECT_EQ(readAll(in), out.written.substr(static_cast<size_t>(later)));
}

struct Store : testing::RunFolderFixture {
    Store() : RunFolderFixture("segments") {}
};

TEST(OutputSegments, AnImportReadsEverySegmentAndResumesAcrossThem) {
    Store s;
    SegmentedOutput out(s.runDir, 4096);
    out.lines(0, 1200);
    ASSERT_GE(out.writer.segments().size(), 3u);
    const int64_t firstEnd = out.writer.segments()[0].to;
    // Half of the first segment, then the rest: every step once.
    const OutputImport part = importOutput(s.store, *s.store.run(s.id), 0, firstEnd / 2);
    const OutputImport rest = importOutput(s.store, *s.store.run(s.id), part.to);
    EXPECT_EQ(rest.from, part.to);
    EXPECT_EQ(rest.to, static_cast<int64_t>(out.written.size()));
    const std::vector<StepEvent> steps = s.store.metrics(s.id);
    ASSERT_EQ(steps.size(), 1200u);
    for (size_t i = 0; i < steps.size(); ++i) ASSERT_EQ(steps[i].step, static_cast<int64_t>(i));
    EXPECT_EQ(s.store.outputOffset(s.id), static_cast<int64_t>(out.written.size()));
}

TEST(OutputSegments, AnImportOfAFolderWhoseOldestSegmentsAreGoneTakesWhatIsLeft) {
    Store s;
    SegmentedOutput out(s.runDir, 4096);
    out.lines(0, 1200);
    const RawOutputWriter::Segment second = out.writer.segments()[1];
    ASSERT_EQ(std::remove(out.writer.segments()[0].path.c_str()), 0);
    out.writer.forgetOldestSegment();
    const OutputImport done = importOutput(s.store, *s.store.run(s.id), 0);
    EXPECT_EQ(done.from, second.from);
    EXPECT_EQ(done.to, static_cast<int64_t>(out.written.size()));
    // The first step left is the one whose line starts the second segment.
    const std::vector<StepEvent> steps = s.store.metrics(s.id);
    ASSERT_FALSE(steps.empty());
    const std::string firstLine = stepLine(steps.front().step);
    EXPECT_EQ(out.written.compare(static_cast<size_t>(second.from), firstLine.size(), firstLine), 0);
    EXPECT_EQ(steps.back().step, 1199);
}

} // namespace
} // namespace parallax
