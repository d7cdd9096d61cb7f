// Importing a run's output.log: only complete lines, in pieces, whatever their length, and the
// offset recorded at a line's end so that a later import goes on where this one stopped.
#include "core/launch/OutputImport.h"
#include "core/telemetry/TelemetryCodec.h"

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

} // namespace
} // namespace parallax
