// Specs parallax-cli refuses before anything starts, through the real executable: a spec nested
// 30,000 levels deep, a host list of 800,000 bad entries, a profile path that is no profile, a host
// listed twice. Nothing here reaches a worker or mpirun.
#include "tests/support/Process.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>

using namespace parallax::testing;
namespace fs = std::filesystem;

namespace {

struct Timed {
    ProcessResult result;
    double seconds = 0;
};

class CliSpecInput : public ::testing::Test {
protected:
    std::string write(const std::string& name, const std::string& text) {
        const std::string path = m_dir.path() + "/" + name;
        std::ofstream(path, std::ios::binary) << text;
        return path;
    }

    Timed cli(const std::vector<std::string>& args) {
        std::vector<std::string> argv = {PARALLAX_CLI, "--store", store()};
        argv.insert(argv.end(), args.begin(), args.end());
        const auto start = std::chrono::steady_clock::now();
        Timed t;
        t.result = runProcess(argv);
        t.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        return t;
    }

    std::string store() const { return m_dir.path() + "/parallax.db"; }

    // Nothing was created, not even an empty store.
    void expectNothingCreated() { EXPECT_FALSE(fs::exists(store())) << store(); }

    TempDir m_dir;
};

size_t count(const std::string& text, const std::string& part) {
    size_t n = 0;
    for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + part.size())) ++n;
    return n;
}

std::string deepSpec(int levels) {
    std::string header = "d";
    for (int i = 1; i < levels; ++i) header += ".d";
    return "name = \"deep\"\n[" + header + "]\nx = 1\n";
}

// A 60 KB spec of 30,000 levels once crashed every reader inside the TOML library (SIGSEGV).
TEST_F(CliSpecInput, ASpecThirtyThousandLevelsDeepIsRefusedByCheckAndRun) {
    const std::string spec = write("deep.toml", deepSpec(30000));
    for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
             {"check", spec}, {"run", spec}, {"run", spec, "--detach"}}) {
        const Timed t = cli(args);
        EXPECT_EQ(t.result.exitCode, 2) << args.front() << "\n" << t.result.output.substr(0, 2000);
        EXPECT_NE(t.result.output.find(spec + ":2: the TOML nests deeper than 64 levels"), std::string::npos)
            << t.result.output.substr(0, 2000);
        EXPECT_LT(t.seconds, 5.0) << "refused before the TOML library reads it";
    }
    expectNothingCreated();
}

// 800,000 entries that are not "name:slots" (a 4 MB file): a few lines, each once.
TEST_F(CliSpecInput, EightHundredThousandBadHostsAreReportedInAFewLinesOnce) {
    std::string hosts;
    for (int i = 0; i < 800000; ++i) hosts += i == 0 ? "\"b\"" : ", \"b\"";
    const std::string spec = write("many.toml", "name = \"many\"\n[launch]\ntarget = \"hosts\"\nhosts = [" + hosts + "]\n");
    for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
             {"check", spec}, {"run", spec}, {"run", spec, "--detach"}}) {
        const Timed t = cli(args);
        const std::string& out = t.result.output;
        EXPECT_EQ(t.result.exitCode, 2) << args.front() << "\n" << out.substr(0, 2000);
        EXPECT_LT(out.size(), 20000u) << args.front() << " printed " << out.size() << " bytes";
        EXPECT_EQ(count(out, "launch.hosts[0] = \"b\" must be \"name:slots\""), 1u) << out.substr(0, 4000);
        EXPECT_EQ(count(out, "launch.hosts: 799990 more entries that are not \"name:slots\" (800000 in all"), 1u)
            << out.substr(0, 4000);
        EXPECT_EQ(out.find("launch.hosts[10] ="), std::string::npos) << "only the first ten are listed";
    }
    expectNothingCreated();
}

TEST_F(CliSpecInput, AClusterPathThatIsNoProfileIsNotRead) {
    const std::string spec =
        write("passwd.toml", "name = \"p\"\n[launch]\ntarget = \"hosts\"\ncluster = \"../../../../etc/passwd\"\n");
    for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{{"check", spec}, {"run", spec}}) {
        const Timed t = cli(args);
        const std::string& out = t.result.output;
        EXPECT_EQ(t.result.exitCode, 2) << out;
        EXPECT_NE(out.find("launch.cluster = \"../../../../etc/passwd\" is a path, but not of a cluster profile (a "
                           ".toml file); write the profile's name"),
                  std::string::npos)
            << out;
        EXPECT_EQ(out.find("passwd:1"), std::string::npos) << "the file was read as TOML\n" << out;
    }
    expectNothingCreated();
}

TEST_F(CliSpecInput, AHostListedTwiceCountsOnceForMinHosts) {
    const std::string spec = write("twice.toml", "name = \"twice\"\n[train]\ncheckpoint_every = 10\n[launch]\n"
                                                 "target = \"hosts\"\nhosts = [\"h:1\", \"h:1\"]\n"
                                                 "on_host_failure = \"resume\"\nmin_hosts = 2\n");
    const Timed t = cli({"check", spec});
    const std::string& out = t.result.output;
    EXPECT_EQ(t.result.exitCode, 2) << out;
    EXPECT_NE(out.find("launch.min_hosts = 2 but launch.hosts names 1 host(s)"), std::string::npos) << out;
    EXPECT_NE(out.find("launch.hosts[1] = \"h:1\" names h again"), std::string::npos) << out;
    EXPECT_EQ(out.find("hosts (the spec), checked over ssh"), std::string::npos) << "nothing was tried\n" << out;
}

// `check` estimates the disk a run writes per hour (DiskEstimate.h) and warns past 1 GB/h and when
// the budget would be passed within a day.
TEST_F(CliSpecInput, CheckEstimatesTheDiskARunWritesPerHour) {
    const std::string spec = write("wide.toml", "name = \"wide\"\n[train]\nglobal_batch = 1024\nmicro_batch = 1\n"
                                                "[parallel]\ndp = 1024\n[retention]\ndisk_budget_gb = 5\n");
    const Timed t = cli({"check", spec});
    const std::string& out = t.result.output;
    EXPECT_NE(out.find("disk per hour (1024 ranks, at 1 s steps):\n  store            221 MB/h (13.6M rows/h sent; "
                       "older telemetry thinned), and 607 MB more for the last 60 min at full rate\n"),
              std::string::npos)
        << out;
    EXPECT_NE(out.find("  output.log.gz    566 MB/h compressed\n"), std::string::npos) << out;
    EXPECT_NE(out.find("  total            787 MB/h, 8.1 GB a day (output kept: 2048 MiB)\n"), std::string::npos) << out;
    EXPECT_NE(out.find("    device samples: 7.4 M rows/h, 464 MB/h in the store (8 MB/h once older than "
                       "retention.raw_telemetry_minutes), 376 MB/h of output\n"),
              std::string::npos)
        << out;
    EXPECT_EQ(out.find("above 1 GB/h"), std::string::npos) << out;
    EXPECT_NE(out.find("  warning: retention.disk_budget_gb (5.0 GB) is passed within a day: a day of this run "
                       "writes about 8.1 GB"),
              std::string::npos)
        << out;
    expectNothingCreated();
}

} // namespace
