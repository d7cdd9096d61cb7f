// Importing a run's output.log: only complete lines, in pieces, whatever their length, and the
// offset recorded at a line's end so that a later import goes on where this one stopped.
#include "core/launch/OutputImport.h"
#include "core/launch/PrivateFile.h"
#include "core/launch/RawOutput.h"
#include "core/telemetry/TelemetryCodec.h"

#include "tests/core/launch/RunFolderFixture.h"
#include "tests/support/Process.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace parallax {
namespace {

namespace fs = std::filesystem;

using Scratch = parallax::testing::TempDir;

std::string stepLine(int64_t step) {
    StepEvent e;
    e.step = step;
    e.loss = 1.0 / static_cast<double>(step + 1);
    e.t = 1000 + static_cast<double>(step);
    return "[1,0]<stdout>:" + encodeEvent(e) + "\n";
}

TEST(OutputImport, LongLinesAndAnUnfinishedTailAreReadInPieces) {
    Scratch dir;
    RunStore store(dir.path() + "/parallax.db");
    NewRun nr;
    nr.name = "imported";
    nr.spec_toml = "name = \"imported\"\n";
    const int64_t id = store.createRun(nr);
    const std::string runDir = dir.path() + "/run";
    fs::create_directories(runDir);
    store.setRunDir(id, runDir);
    const std::string longLine = "[1,1]<stdout>:" + std::string(3 << 20, 'x') + "\n"; // three pieces' worth
    const std::string tail = "[1,0]<stdout>:" + std::string(2 << 20, 'y');           // no newline yet
    {
        std::ofstream out(runDir + "/output.log", std::ios::binary);
        out << stepLine(0) << longLine << stepLine(1) << tail;
    }
    const OutputImport done = importOutput(store, *store.run(id), 0);
    const int64_t complete = static_cast<int64_t>(stepLine(0).size() + longLine.size() + stepLine(1).size());
    EXPECT_EQ(done.to, complete);
    EXPECT_EQ(done.file_bytes, complete + static_cast<int64_t>(tail.size()));
    EXPECT_EQ(store.outputOffset(id), complete);
    ASSERT_EQ(store.metrics(id).size(), 2u);
    const std::vector<LogRow> logs = store.logs(id, {});
    ASSERT_EQ(logs.size(), 1u);
    EXPECT_EQ(logs[0].rank, 1);
    EXPECT_EQ(logs[0].message.size(), size_t{3} << 20);

    // The tail ends; the next import takes it, and nothing twice.
    { std::ofstream(runDir + "/output.log", std::ios::binary | std::ios::app) << "\n" << stepLine(2); }
    const OutputImport next = importOutput(store, *store.run(id), *store.outputOffset(id));
    EXPECT_EQ(next.from, complete);
    EXPECT_EQ(store.metrics(id).size(), 3u);
    EXPECT_EQ(store.logs(id, {}).size(), 2u);
    EXPECT_EQ(store.outputOffset(id), static_cast<int64_t>(fs::file_size(runDir + "/output.log")));
}

struct ImportFixture : testing::RunFolderFixture {
    ImportFixture() : RunFolderFixture("imported") {}
};

// The supervisor's compressed output.log.gz, cut where a crash leaves it (after its last flush, no
// gzip trailer): the import reads to the flush, and a line written after it is not there.
TEST(OutputImport, ACompressedOutputCutAfterItsLastFlushImportsUpToIt) {
    ImportFixture f;
    const std::string path = f.runDir + "/" + kCompressedOutputName;
    std::FILE* file = createPrivateFile(path);
    {
        RawOutputWriter out(file);
        ASSERT_TRUE(out.write(stepLine(0).data(), stepLine(0).size()));
        ASSERT_TRUE(out.write(stepLine(1).data(), stepLine(1).size()));
        ASSERT_TRUE(out.flush());
        ASSERT_TRUE(out.write(stepLine(2).data(), stepLine(2).size())); // never flushed
        EXPECT_LT(out.bytesOut(), out.bytesIn()) << "compressed";
    }
    std::fclose(file);
    EXPECT_EQ(rawOutputFile(f.runDir), path);
    const OutputImport done = importOutput(f.store, *f.store.run(f.id), 0);
    EXPECT_EQ(done.to, static_cast<int64_t>(stepLine(0).size() + stepLine(1).size()));
    EXPECT_EQ(f.store.metrics(f.id).size(), 2u);
}

// A reader kept between imports of a file still written goes on from where it stopped, and what
// the writer added after the reader met the end is read on the next import.
TEST(OutputImport, AKeptReaderFollowsACompressedFileAsItGrows) {
    ImportFixture f;
    std::FILE* file = createPrivateFile(f.runDir + "/" + kCompressedOutputName);
    RawOutputWriter out(file);
    std::unique_ptr<RawOutputReader> reader;
    int64_t written = 0;
    for (int64_t step = 0; step < 4; ++step) {
        const std::string line = stepLine(step);
        ASSERT_TRUE(out.write(line.data(), line.size()));
        ASSERT_TRUE(out.flush());
        written += static_cast<int64_t>(line.size());
        const RawOutputReader* before = reader.get();
        const OutputImport done =
            importOutput(f.store, *f.store.run(f.id), f.store.outputOffset(f.id).value_or(0), written, &reader);
        EXPECT_EQ(done.to, written) << "step " << step;
        if (step > 0) EXPECT_EQ(reader.get(), before) << "the same reader, read on";
    }
    ASSERT_TRUE(out.finish());
    std::fclose(file);
    EXPECT_EQ(f.store.metrics(f.id).size(), 4u);
    EXPECT_EQ(readRawOutput(f.runDir + "/" + kCompressedOutputName).size(), static_cast<size_t>(written));
}

// A gzip file damaged in the middle is an error naming the file and where, not rows made of noise.
TEST(OutputImport, ADamagedCompressedOutputIsAnErrorNamingTheFile) {
    ImportFixture f;
    const std::string path = f.runDir + "/" + kCompressedOutputName;
    std::FILE* file = createPrivateFile(path);
    {
        RawOutputWriter out(file);
        for (int64_t step = 0; step < 200; ++step) ASSERT_TRUE(out.write(stepLine(step).data(), stepLine(step).size()));
        ASSERT_TRUE(out.finish());
    }
    std::fclose(file);
    {
        std::fstream bytes(path, std::ios::binary | std::ios::in | std::ios::out);
        bytes.seekp(static_cast<std::streamoff>(fs::file_size(path) / 2));
        bytes.write("\xff\xff\xff\xff\xff\xff\xff\xff", 8);
    }
    try {
        importOutput(f.store, *f.store.run(f.id), 0);
        ADD_FAILURE() << "a damaged file imported";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find(path + " is damaged after"), std::string::npos) << e.what();
    }
}

} // namespace
} // namespace parallax
