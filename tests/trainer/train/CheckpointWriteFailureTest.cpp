// Runs under mpirun (-np 1 and -np 2): every rank runs every test. A checkpoint that cannot be
// written (a full disk, a file-size limit on one rank) fails on every rank with the first failing
// rank's message (what, which step, which host and rank, how far), leaves no partial folder behind,
// and leaves the older complete checkpoints as they were, still what a resume reads.

#include "tests/support/MpiTestMain.h"
#include "tests/trainer/train/TmpfsMount.h"
#include "trainer/comm/MpiCommunicator.h"
#include "trainer/train/Checkpoint.h"

#include "core/util/Files.h"
#include "core/util/HostName.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <sys/resource.h>

using namespace parallax;
using namespace parallax::testing;

namespace {

std::shared_ptr<Communicator> world() {
    static std::shared_ptr<Communicator> w = std::make_shared<MpiCommunicator>(MPI_COMM_WORLD);
    return w;
}

// A scratch folder that every rank sees: rank 0 creates it and sends its name; removed at the end,
// once every rank is done with it.
class SharedDir {
public:
    SharedDir() {
        char name[4096] = {};
        if (world()->rank() == 0) {
            const char* tmp = std::getenv("TMPDIR");
            const std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/parallax-ckpt-XXXXXX";
            std::snprintf(name, sizeof name, "%s", pattern.c_str());
            if (!::mkdtemp(name)) name[0] = '\0';
        }
        MPI_Bcast(name, sizeof name, MPI_CHAR, 0, MPI_COMM_WORLD);
        m_path = name;
    }
    ~SharedDir() {
        world()->barrier();
        if (world()->rank() == 0 && !m_path.empty()) {
            try {
                removeAll(m_path);
            } catch (const FileError&) {
                // Left for the system's tmp cleaner.
            }
        }
    }
    SharedDir(const SharedDir&) = delete;
    SharedDir& operator=(const SharedDir&) = delete;
    const std::string& path() const { return m_path; }

private:
    std::string m_path;
};

// A tmpfs that rank 0 mounts for every rank; unmounted once every rank is done with it.
class SharedTmpfs {
public:
    SharedTmpfs(const std::string& dir, int64_t bytes) {
        if (world()->rank() == 0) m_mount.emplace(dir, bytes);
        m_mounted = world()->allReduceScalar(m_mount && m_mount->mounted() ? 1.0 : 0.0, ReduceOp::Max) > 0;
    }
    ~SharedTmpfs() {
        world()->barrier();
        m_mount.reset();
    }
    SharedTmpfs(const SharedTmpfs&) = delete;
    SharedTmpfs& operator=(const SharedTmpfs&) = delete;
    bool mounted() const { return m_mounted; }
    std::string error() const { return m_mount ? m_mount->error() : "rank 0 could not mount a tmpfs"; }

private:
    std::optional<TmpfsMount> m_mount;
    bool m_mounted = false;
};

CheckpointMeta metaAt(int64_t step) {
    CheckpointMeta meta;
    meta.step = step;
    meta.optimizer_steps = step;
    meta.layout = "dp" + std::to_string(world()->size()) + ".tp1.pp1.z0.1f1b";
    meta.seed = 7;
    meta.dims.kind = ModelKind::Gpt;
    meta.dims.layers = 1;
    return meta;
}

// One tensor "w" of (size * perRank) values split evenly over the ranks; rank r holds r*perRank
// onwards, each value being `base` plus its index.
std::vector<CheckpointPiece> piecesOf(int64_t perRank, float base) {
    CheckpointPiece p;
    p.name = "w";
    p.role = "param";
    p.shape = {world()->size() * perRank};
    p.flat_offset = world()->rank() * perRank;
    p.flat_length = perRank;
    p.data = torch::arange(p.flat_offset, p.flat_offset + perRank, torch::kFloat) + base;
    return {p};
}

torch::Tensor wholeOf(int64_t perRank, float base) {
    return torch::arange(0, world()->size() * perRank, torch::kFloat) + base;
}

// The message every rank threw, "" when the checkpoint was saved.
std::string trySave(const std::string& dir, int64_t step, const std::vector<CheckpointPiece>& pieces) {
    try {
        saveCheckpoint(dir, metaAt(step), pieces, *world());
        return "";
    } catch (const CheckpointError& e) {
        return e.what();
    }
}

// Every rank's message, gathered, so that each rank can check that all ranks threw the same one.
std::vector<std::string> everyRanks(const std::string& mine) {
    const int64_t width = static_cast<int64_t>(
        world()->allReduceScalar(static_cast<double>(mine.size() + 1), ReduceOp::Max));
    auto local = torch::zeros({width}, torch::kUInt8);
    std::memcpy(local.data_ptr(), mine.data(), mine.size());
    auto all = torch::zeros({width * world()->size()}, torch::kUInt8);
    world()->allGather(all, local);
    std::vector<std::string> out;
    for (int r = 0; r < world()->size(); ++r)
        out.emplace_back(reinterpret_cast<const char*>(all.data_ptr<uint8_t>() + r * width));
    return out;
}

constexpr int64_t kSmall = 16384; // values per rank of a checkpoint that fits (64 KiB)

TEST(CheckpointWriteFailure, FullDiskFailsOnEveryRankAndKeepsTheLastCompleteCheckpoint) {
    SharedDir tmp;
    ASSERT_FALSE(tmp.path().empty());
    // What one small checkpoint takes, measured on the ordinary disk: the tmpfs holds it twice and
    // a little more, and a large one (each rank's file as big as the whole tmpfs) cannot fit.
    const std::string probe = joinPath(tmp.path(), "probe");
    EXPECT_EQ(trySave(probe, 10, piecesOf(kSmall, 0.5f)), "");
    const auto usage = static_cast<int64_t>(
        world()->allReduceScalar(world()->rank() == 0 ? static_cast<double>(diskUsage(probe)) : 0.0, ReduceOp::Max));
    ASSERT_GT(usage, kSmall * 4);
    const int64_t diskBytes = 2 * usage + 65536;
    const int64_t large = diskBytes / 4;

    const std::string disk = joinPath(tmp.path(), "disk");
    SharedTmpfs tmpfs(disk, diskBytes);
    if (!tmpfs.mounted()) GTEST_SKIP() << tmpfs.error();
    const std::string dir = joinPath(disk, "checkpoints");

    EXPECT_EQ(trySave(dir, 10, piecesOf(kSmall, 0.5f)), "") << "a checkpoint of " << usage << " bytes fits in "
                                                           << diskBytes;
    const std::string error = trySave(dir, 20, piecesOf(large, 2.5f));
    EXPECT_NE(error.find("no space left on device writing checkpoint step 20 on " + hostName() + ", rank "),
              std::string::npos)
        << error;
    EXPECT_NE(error.find(" bytes written"), std::string::npos) << error;
    EXPECT_NE(error.find("/step_00000020.partial/rank_"), std::string::npos) << "names the file: " << error;
    for (const std::string& other : everyRanks(error)) EXPECT_EQ(other, error) << "every rank throws the same";

    // The partial folder is gone before any rank returns; the step 10 checkpoint is what a resume reads.
    EXPECT_FALSE(pathExists(joinPath(dir, "step_00000020.partial")));
    EXPECT_FALSE(pathExists(joinPath(dir, "step_00000020")));
    EXPECT_EQ(listCheckpoints(dir), std::vector<std::string>{joinPath(dir, "step_00000010")});
    {
        CheckpointReader reader(dir);
        EXPECT_EQ(reader.dir(), joinPath(dir, "step_00000010"));
        EXPECT_EQ(reader.meta().step, 10);
        EXPECT_TRUE(reader.warnings().empty());
        EXPECT_TRUE(torch::equal(reader.full("w", "param"), wholeOf(kSmall, 0.5f)));
    }

    // The same step written again and failing leaves the complete one in place.
    const std::string again = trySave(dir, 10, piecesOf(large, 4.5f));
    EXPECT_NE(again.find("no space left on device writing checkpoint step 10"), std::string::npos) << again;
    EXPECT_EQ(listCheckpoints(dir), std::vector<std::string>{joinPath(dir, "step_00000010")});
    EXPECT_TRUE(torch::equal(CheckpointReader(dir).full("w", "param"), wholeOf(kSmall, 0.5f)));

    // The space the failures took was given back: a checkpoint that fits is written again.
    EXPECT_EQ(trySave(dir, 30, piecesOf(kSmall, 6.5f)), "");
    EXPECT_TRUE(torch::equal(CheckpointReader(dir).full("w", "param"), wholeOf(kSmall, 6.5f)));
}

TEST(CheckpointWriteFailure, OneRanksWriteErrorIsEveryRanksErrorNamingThatRank) {
    SharedDir tmp;
    ASSERT_FALSE(tmp.path().empty());
    const std::string dir = joinPath(tmp.path(), "checkpoints");
    EXPECT_EQ(trySave(dir, 5, piecesOf(kSmall, 0.5f)), "");

    // The last rank may write files of 4 KiB at most: its shard fails there with EFBIG.
    const int failing = world()->size() - 1;
    const bool mine = world()->rank() == failing;
    rlimit saved{};
    ::getrlimit(RLIMIT_FSIZE, &saved);
    auto* previousHandler = std::signal(SIGXFSZ, SIG_IGN);
    if (mine) {
        rlimit small = saved;
        small.rlim_cur = 4096;
        ::setrlimit(RLIMIT_FSIZE, &small);
    }
    const std::string error = trySave(dir, 9, piecesOf(kSmall, 1.5f));
    if (mine) ::setrlimit(RLIMIT_FSIZE, &saved);
    std::signal(SIGXFSZ, previousHandler);

    const std::string expected = "file too large writing checkpoint step 9 on " + hostName() + ", rank " +
                                 std::to_string(failing) + " (" + joinPath(dir, "step_00000009.partial/rank_");
    EXPECT_EQ(error.rfind(expected, 0), 0u) << error;
    EXPECT_NE(error.find(": 4096 of "), std::string::npos) << "how far the file got: " << error;
    for (const std::string& other : everyRanks(error)) EXPECT_EQ(other, error) << "every rank throws the same";
    EXPECT_FALSE(pathExists(joinPath(dir, "step_00000009.partial")));
    EXPECT_EQ(listCheckpoints(dir), std::vector<std::string>{joinPath(dir, "step_00000005")});
    EXPECT_TRUE(torch::equal(CheckpointReader(dir).full("w", "param"), wholeOf(kSmall, 0.5f)));
}

} // namespace

int main(int argc, char** argv) {
    return parallax::test::runTestsUnderMpi(argc, argv);
}
