#include "core/launch/LineBuffer.h"
#include "core/launch/LogLevelGuess.h"
#include "core/launch/SignalNames.h"
#include "core/launch/SlurmJobs.h"
#include "core/launch/Utf8.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

using namespace parallax;

namespace {

std::vector<std::string> split(LineBuffer& b, const std::vector<std::string>& reads, bool finish = true) {
    std::vector<std::string> lines;
    auto on = [&](std::string_view l) { lines.emplace_back(l); };
    for (const std::string& r : reads)
        b.append(r.data(), r.size(), on);
    if (finish)
        b.finish(on);
    return lines;
}

} // namespace

TEST(LineBuffer, JoinsLinesAcrossReads) {
    LineBuffer b;
    EXPECT_EQ(split(b, {"ab", "c\nde", "f\r\n\n", "g\nh"}),
              (std::vector<std::string>{"abc", "def", "", "g", "h"}));
    LineBuffer c;
    EXPECT_EQ(split(c, {"x\n"}, false), (std::vector<std::string>{"x"}));
    EXPECT_EQ(c.pendingBytes(), 0u);
}

TEST(LineBuffer, CutsOverlongLines) {
    LineBuffer b(8);
    EXPECT_EQ(split(b, {"0123456789abc\nshort\n", "0123", "4567", "89", "ab\nnext\n", "0123456789\n"}),
              (std::vector<std::string>{"01234567", "short", "01234567", "next", "01234567"}));
    EXPECT_EQ(b.truncated(), 3u);
}

TEST(Utf8, ValidatesAndReplaces) {
    EXPECT_TRUE(isCleanUtf8("plain ascii text that is longer than eight bytes"));
    EXPECT_TRUE(isCleanUtf8("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"));
    EXPECT_FALSE(isCleanUtf8("bad \xFF byte"));
    EXPECT_FALSE(isCleanUtf8("truncated \xE2\x82"));
    EXPECT_FALSE(isCleanUtf8("overlong \xC0\xAF"));
    EXPECT_FALSE(isCleanUtf8("surrogate \xED\xA0\x80"));
    EXPECT_FALSE(isCleanUtf8(std::string("nul \0 inside a long enough line", 31)));
    EXPECT_EQ(sanitizeUtf8("a\xFF" "b\xE2\x82"), "a\xEF\xBF\xBD" "b\xEF\xBF\xBD\xEF\xBF\xBD");
    EXPECT_EQ(sanitizeUtf8(std::string("x\0y", 3)), "x\xEF\xBF\xBDy");
    EXPECT_EQ(sanitizeUtf8("caf\xC3\xA9"), "caf\xC3\xA9");
    EXPECT_TRUE(isCleanUtf8(sanitizeUtf8("\xF4\x90\x80\x80 \xC3")));
}

// What anyone wrote (a rank's line, a run's name) cannot steer the terminal it is printed on.
TEST(Utf8, TerminalSafeTextShowsControlsInsteadOfObeyingThem) {
    EXPECT_EQ(terminalSafe("plain text\twith a tab, 中文, é"), "plain text\twith a tab, 中文, é");
    EXPECT_EQ(terminalSafe(std::string("a\0b", 3)), "a\\x00b");
    EXPECT_EQ(terminalSafe("\x1b[2Jcleared"), "\\x1B[2Jcleared");
    EXPECT_EQ(terminalSafe("line\rover\n"), "line\\x0Dover\\x0A");
    EXPECT_EQ(terminalSafe("file\u202Etxt.exe"), "file\\u{202E}txt.exe");
    EXPECT_EQ(terminalSafe("\u2066isolate\u2069"), "\\u{2066}isolate\\u{2069}");
    EXPECT_EQ(terminalSafe("\xC2\x9B" "31m"), "\\x9B31m"); // C1 CSI
    EXPECT_EQ(terminalSafe("bad \xFF byte"), "bad \xEF\xBF\xBD byte");
}

TEST(LogLevelGuess, Keywords) {
    EXPECT_EQ(guessLogLevel("RuntimeError: CUDA error: out of memory"), LogLevel::Error);
    EXPECT_EQ(guessLogLevel("Traceback (most recent call last):"), LogLevel::Error);
    EXPECT_EQ(guessLogLevel("terminate called after throwing an instance of 'c10::Error'"), LogLevel::Error);
    EXPECT_EQ(guessLogLevel("Segmentation fault (core dumped)"), LogLevel::Error);
    EXPECT_EQ(guessLogLevel("Killed"), LogLevel::Error);
    EXPECT_EQ(guessLogLevel("UserWarning: something"), LogLevel::Warn);
    EXPECT_EQ(guessLogLevel("WARNING: There was an error"), LogLevel::Error);
    EXPECT_EQ(guessLogLevel("[W ProcessGroup] warn: slow"), LogLevel::Warn);
    EXPECT_EQ(guessLogLevel("NCCL INFO Bootstrap : Using eth0"), LogLevel::Info);
    EXPECT_EQ(guessLogLevel(""), LogLevel::Info);
}

TEST(SignalNames, NamesAndDescriptions) {
    EXPECT_EQ(signalName(SIGKILL), "SIGKILL");
    EXPECT_EQ(signalName(SIGTERM), "SIGTERM");
    EXPECT_EQ(signalName(77), "signal 77");
    EXPECT_EQ(signalFromDescription("Killed"), SIGKILL);
    EXPECT_EQ(signalFromDescription("Segmentation fault (core dumped)"), SIGSEGV);
    EXPECT_EQ(signalFromDescription("Terminated."), SIGTERM);
    EXPECT_EQ(signalFromDescription("Exploded"), 0);
}

TEST(SlurmJobs, DurationsInEveryFormSlurmWrites) {
    EXPECT_EQ(parseSlurmDuration("30"), 30 * 60);         // MM
    EXPECT_EQ(parseSlurmDuration("01:30"), 90);           // MM:SS
    EXPECT_EQ(parseSlurmDuration("02:00:05"), 7205);      // HH:MM:SS
    EXPECT_EQ(parseSlurmDuration("1-02"), 86400 + 7200);  // D-HH
    EXPECT_EQ(parseSlurmDuration("1-00:01"), 86400 + 60); // D-HH:MM
    EXPECT_EQ(parseSlurmDuration("2-00:00:01"), 2 * 86400 + 1);
    for (const char* none : {"UNLIMITED", "Partition_Limit", "", "1:2:3:4", "-5", "1-", "a:b"})
        EXPECT_FALSE(parseSlurmDuration(none).has_value()) << none;
}

TEST(SlurmJobs, EveryEndStateMapsToARunState) {
    EXPECT_EQ(slurmEndState("PENDING"), nullptr);
    EXPECT_EQ(slurmEndState("RUNNING"), nullptr);
    EXPECT_EQ(slurmEndState("COMPLETING"), nullptr);
    ASSERT_NE(slurmEndState("CANCELLED by 0"), nullptr);
    EXPECT_STREQ(slurmEndState("CANCELLED by 0")->state, "CANCELLED");
    EXPECT_EQ(slurmEndState("TIMEOUT")->run_state, RunState::Failed);
    EXPECT_EQ(slurmEndState("COMPLETED")->run_state, std::nullopt); // the ranks' run_end decides
    for (const SlurmEndState& e : slurmEndStates()) {
        EXPECT_EQ(slurmEndState(e.state), &e);
        EXPECT_NE(std::string(e.says), "");
    }
}

TEST(SlurmJobs, SettingsOfAOneLiner) {
    const auto kv = parseSlurmSettings("JobId=12 JobName=x JobState=PENDING Reason=Priority Dependency=(null) "
                                       "TimeLimit=00:01:00 NodeList=(null) Comment=");
    EXPECT_EQ(kv.at("JobId"), "12");
    EXPECT_EQ(kv.at("JobState"), "PENDING");
    EXPECT_EQ(kv.at("Reason"), "Priority");
    EXPECT_EQ(kv.at("TimeLimit"), "00:01:00");
    EXPECT_EQ(kv.at("Comment"), "");
}

TEST(SlurmJobs, PartitionsAsSinfoListsThem) {
    const auto parts = parseSlurmPartitions("debug*|up|1/3/0/4|8/24/0/32|infinite\n"
                                            "gpu|drain|0/0/2/2|0/0/128/128|2-00:00:00\n"
                                            "broken|up|x|y|z\n");
    ASSERT_EQ(parts.size(), 2u);
    EXPECT_EQ(parts[0].name, "debug");
    EXPECT_TRUE(parts[0].is_default);
    EXPECT_EQ(parts[0].nodes_allocated, 1);
    EXPECT_EQ(parts[0].nodes_idle, 3);
    EXPECT_EQ(parts[0].nodes_total, 4);
    EXPECT_EQ(parts[0].cpus_idle, 24);
    EXPECT_EQ(parts[0].time_limit, "infinite");
    EXPECT_EQ(parts[1].name, "gpu");
    EXPECT_FALSE(parts[1].is_default);
    EXPECT_EQ(parts[1].availability, "drain");
    EXPECT_EQ(parts[1].nodes_other, 2);
}

namespace {

// A stand-in `sinfo` first on PATH that prints `err` and exits 1, for one test.
class FakeSinfo {
public:
    explicit FakeSinfo(const std::string& err) {
        char dir[] = "/tmp/parallax-sinfo-XXXXXX";
        m_dir = ::mkdtemp(dir);
        const std::string script = m_dir + "/sinfo";
        std::ofstream(script) << "#!/bin/sh\nprintf '%s\\n' '" << err << "' >&2\nexit 1\n";
        ::chmod(script.c_str(), 0755);
        m_path = std::getenv("PATH") ? std::getenv("PATH") : "";
        ::setenv("PATH", (m_dir + ":" + m_path).c_str(), 1);
    }
    ~FakeSinfo() {
        ::setenv("PATH", m_path.c_str(), 1);
        std::filesystem::remove_all(m_dir);
    }

private:
    std::string m_dir, m_path;
};

} // namespace

// A machine without slurm.conf: the client's resolver error becomes what it means and its fix.
TEST(SlurmJobs, NoControllerIsSaidInWordsWithItsFix) {
    {
        FakeSinfo sinfo("sinfo: error: resolve_ctls_from_dns_srv: res_nsearch error: Unknown host");
        const SlurmPartitions p = querySlurmPartitions();
        EXPECT_TRUE(p.partitions.empty());
        EXPECT_NE(p.error.find("no Slurm configuration"), std::string::npos) << p.error;
        EXPECT_NE(p.error.find("set SLURM_CONF"), std::string::npos) << p.error;
    }
    {
        FakeSinfo sinfo("sinfo: error: Unable to contact slurm controller (connect failure)");
        const SlurmPartitions p = querySlurmPartitions();
        EXPECT_NE(p.error.find("slurmctld) does not answer"), std::string::npos) << p.error;
    }
    {
        FakeSinfo sinfo("sinfo: error: invalid partition specified");
        const SlurmPartitions p = querySlurmPartitions();
        EXPECT_EQ(p.error, "sinfo exited with code 1: sinfo: error: invalid partition specified");
    }
}
