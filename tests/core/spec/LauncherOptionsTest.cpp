#include "core/spec/LauncherOptions.h"
#include "core/spec/SpecIO.h"
#include "core/spec/SpecValidator.h"

#include "tests/core/spec/IssueText.h"

#include <gtest/gtest.h>

#include <set>

namespace parallax {
namespace {

struct ArgsCase {
    Launcher launcher;
    std::vector<std::string> args;
    // Each expected issue: a part of its message and whether it is a warning (a notice).
    std::vector<std::pair<std::string, bool>> expected;
};

class LauncherArgs : public ::testing::TestWithParam<ArgsCase> {};

TEST_P(LauncherArgs, AreCheckedAgainstTheLaunchersOptions) {
    const ArgsCase& c = GetParam();
    const std::vector<SpecIssue> issues = checkLauncherArgs(c.args, c.launcher);
    EXPECT_EQ(issues.size(), c.expected.size()) << describe(issues);
    for (const auto& [message, warning] : c.expected) {
        bool found = false;
        for (const SpecIssue& i : issues)
            if (i.field == "launch.mpirun_args" && i.message.find(message) != std::string::npos && i.warning == warning)
                found = true;
        EXPECT_TRUE(found) << "expected " << (warning ? "warning" : "error") << " containing \"" << message
                           << "\"; got:\n"
                           << describe(issues);
    }
}

const Launcher M = Launcher::OpenMpi;
const Launcher S = Launcher::Srun;

INSTANTIATE_TEST_SUITE_P(
    Mpirun, LauncherArgs,
    ::testing::Values(
        ArgsCase{M, {"--mca", "btl", "self,vader"}, {}},
        ArgsCase{M, {"-mca", "btl_tcp_if_include", "lo", "--report-bindings", "-x", "OMP_PROC_BIND=true"}, {}},
        ArgsCase{M, {"--map-by", "slot", "--oversubscribe", "--tag-output"}, {}},
        ArgsCase{M, {"--bogus"}, {{"launch.mpirun_args[0] = \"--bogus\": --bogus is not an option of mpirun (Open MPI 4.1)", false}}},
        ArgsCase{M, {"--rank-bi", "core", "hostname"}, {{"did you mean --rank-by?", false}}}, // mpirun stops there
        ArgsCase{M, {"--mca", "plm_rsh_agent", "foo"},
                 {{"launch.mpirun_args runs commands: --mca plm_rsh_agent 'foo' starts 'foo' on every host", true}}},
        ArgsCase{M, {"-gmca", "orte_fork_agent", "strace"}, {{"starts every rank through 'strace'", true}}},
        ArgsCase{M, {"--mca", "plm_rsh_args", "-o ProxyCommand=x"}, {{"passes '-o ProxyCommand=x' to ssh", true}}},
        ArgsCase{M, {"--launch-agent", "/tmp/agent"},
                 {{"runs commands: --launch-agent '/tmp/agent' starts '/tmp/agent' on every host instead of orted", true}}},
        ArgsCase{M, {"--prefix", "/opt/ompi"}, {{"runs orted and the Open MPI libraries from '/opt/ompi'", true}}},
        ArgsCase{M, {"--app", "apps.txt"}, {{"runs the programs listed in the appfile 'apps.txt'", true}}},
        ArgsCase{M, {"-x", "LD_PRELOAD=/tmp/x.so"}, {{"-x 'LD_PRELOAD=/tmp/x.so' loads '/tmp/x.so' into every rank", true}}},
        ArgsCase{M, {"-x", "LD_LIBRARY_PATH"}, {{"from '$LD_LIBRARY_PATH' first", true}}},
        ArgsCase{M, {"hostname"}, {{"runs commands: 'hostname' is a program: mpirun (Open MPI 4.1) starts it instead of "
                                    "parallax-worker", true}}},
        ArgsCase{M, {"--", "hostname", "--bogus"}, {{"'hostname' is a program", true}}},
        ArgsCase{M, {"--"}, {}},
        ArgsCase{M, {":", "-np", "1", "evil"},
                 {{"':' starts another app context", true}, {"'evil' is a program", true}}},
        ArgsCase{M, {"-np", "4"}, {{"-np '4' is set by Parallax from parallel.dp * tp * pp", false}}},
        ArgsCase{M, {"-c", "4"}, {{"is set by Parallax from parallel.dp * tp * pp", false}}},
        ArgsCase{M, {"--host", "a,b"}, {{"chooses the hosts", false}}},
        ArgsCase{M, {"--bind-to", "core"}, {{"is set by Parallax from launch.bind", false}}},
        ArgsCase{M, {"--output-filename", "out"}, {{"sends the ranks' output somewhere else than to Parallax", false}}},
        ArgsCase{M, {"--version"}, {{"start no rank", false}}},
        ArgsCase{M, {"-x"}, {{"-x needs a value after it; without one it would take the worker's command line", false}}},
        ArgsCase{M, {"--mca", "btl"}, {{"--mca needs a name and a value", false}}}));

INSTANTIATE_TEST_SUITE_P(
    Srun, LauncherArgs,
    ::testing::Values(
        ArgsCase{S, {"--exclusive"}, {}},
        ArgsCase{S, {"--mem=4G", "-N", "2", "--ntasks-per-node=4", "--mpi=pmix", "-lu", "-N2", "--nodes", "2"}, {}},
        ArgsCase{S, {"--exclusive=user", "--kill-on-bad-exit", "-K1", "--constraint", "a100"}, {}},
        ArgsCase{S, {"--bogus"}, {{"--bogus is not an option of srun (Slurm 22.05)", false}}},
        ArgsCase{S, {"--mca", "btl", "tcp"}, {{"--mca is not an option of srun", false}}},
        ArgsCase{S, {"--gpu"}, {{"--gpu is ambiguous for srun", false}}},
        ArgsCase{S, {"--part=gpu"}, {{"is set by Parallax from launch.partition", false}}},
        ArgsCase{S, {"-n", "4"}, {{"is set by Parallax from parallel.dp * tp * pp", false}}},
        ArgsCase{S, {"-n4"}, {{"is set by Parallax from parallel.dp * tp * pp", false}}},
        ArgsCase{S, {"--cpus-per-task=8"}, {{"set launch.threads_per_rank instead", false}}},
        ArgsCase{S, {"--output=x.log"}, {{"sends the ranks' output somewhere else", false}}},
        ArgsCase{S, {"--label=yes"}, {{"--label takes no value", false}}},
        ArgsCase{S, {"--mem"}, {{"--mem needs a value", false}}},
        ArgsCase{S, {"-Q", "-z"}, {{"-z is not an option of srun", false}}},
        ArgsCase{S, {"--task-prolog=/tmp/p.sh"}, {{"runs commands: --task-prolog=/tmp/p.sh runs '/tmp/p.sh' before every task", true}}},
        ArgsCase{S, {"--epilog", "/tmp/e.sh"}, {{"runs '/tmp/e.sh' after the job step", true}}},
        ArgsCase{S, {"--export=ALL,LD_PRELOAD=/x.so"}, {{"loads '/x.so' into every rank", true}}},
        ArgsCase{S, {"--multi-prog"}, {{"would read the worker's path as that file", true}}},
        ArgsCase{S, {"--bcast"}, {{"copies the worker to every node", true}}},
        ArgsCase{S, {"hostname", "--bogus"}, {{"'hostname' is a program: srun (Slurm 22.05) starts it", true}}}));

TEST(LauncherOptions, TheTableOfTheTargetIsUsed) {
    RunSpec s = parseSpec("[launch]\nmpirun_args = [\"--mca\", \"btl\", \"tcp\"]\n");
    EXPECT_TRUE(validateSpec(s).empty()) << describe(validateSpec(s));
    s.launch.target = Target::Hosts;
    s.launch.hosts = {"a:1"};
    EXPECT_TRUE(validateSpec(s).empty()) << describe(validateSpec(s));
    s.launch.target = Target::Slurm;
    s.launch.hosts.clear();
    const auto issues = validateSpec(s);
    ASSERT_EQ(issues.size(), 1u) << describe(issues);
    EXPECT_NE(issues[0].message.find("--mca is not an option of srun"), std::string::npos) << issues[0].message;
    EXPECT_FALSE(issues[0].warning);
}

TEST(LauncherOptions, NoticesAreWarningsThatCheckPrints) {
    const RunSpec s = parseSpec("[launch]\nmpirun_args = [\"--mca\", \"plm_rsh_agent\", \"foo\"]\n");
    const auto issues = validateSpec(s);
    EXPECT_FALSE(hasErrors(issues));
    EXPECT_NE(formatIssues(issues).find("warning: launch.mpirun_args runs commands: --mca plm_rsh_agent 'foo' starts "
                                        "'foo' on every host"),
              std::string::npos)
        << formatIssues(issues);
}

TEST(LauncherOptions, EnvironmentThatChangesWhatRuns) {
    EXPECT_EQ(environmentRunsCommands("LD_PRELOAD", "/x.so"), "loads '/x.so' into every rank");
    EXPECT_EQ(environmentRunsCommands("OMP_NUM_THREADS", "4"), "");
    const RunSpec s = parseSpec("[launch.env]\nLD_PRELOAD = \"/tmp/it's.so\"\nNCCL_DEBUG = \"WARN\"\n");
    const auto issues = validateSpec(s);
    ASSERT_EQ(issues.size(), 1u) << describe(issues);
    EXPECT_TRUE(issues[0].warning);
    EXPECT_EQ(issues[0].message,
              "launch.env runs commands: launch.env.LD_PRELOAD loads '/tmp/it'\\''s.so' into every rank");
}

// Every option of each table is spelled once, and the options whose effect is not plain say what
// they do.
TEST(LauncherOptions, TablesHaveOneRowPerOption) {
    for (const auto* table : {&mpirunOptions(), &srunOptions()}) {
        std::set<std::string> names;
        std::set<char> letters;
        for (const LauncherOption& o : *table) {
            EXPECT_TRUE(names.insert(o.name).second) << o.name;
            if (o.letter) {
                EXPECT_TRUE(letters.insert(o.letter).second) << o.letter;
            }
            EXPECT_EQ(o.effect == OptionEffect::Plain, std::string(o.note).empty()) << o.name;
            if (o.effect == OptionEffect::RunsCommands && o.args != OptionArgs::None && o.args != OptionArgs::Optional) {
                EXPECT_NE(std::string(o.note).find("{}"), std::string::npos) << o.name << " does not show its value";
            }
        }
    }
}

} // namespace
} // namespace parallax
