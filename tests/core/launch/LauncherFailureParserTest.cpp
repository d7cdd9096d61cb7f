#include "core/launch/LauncherFailureParser.h"
#include "core/launch/OutputDemux.h"

#include <gtest/gtest.h>

#include <sstream>

using namespace parallax;

namespace {

// Messages captured from Open MPI 4.1.4's mpirun (stderr, untagged), with the commands that made
// them (np 2, --oversubscribe --tag-output).

// sh -c 'if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then kill -9 $$; fi; sleep 2'
const char* kSignalled = R"(--------------------------------------------------------------------------
Primary job  terminated normally, but 1 process returned
a non-zero exit code. Per user-direction, the job has been aborted.
--------------------------------------------------------------------------
--------------------------------------------------------------------------
mpirun noticed that process rank 1 with PID 0 on node vm exited on signal 9 (Killed).
--------------------------------------------------------------------------)";

// An MPI program whose rank 1 returns 4 after MPI_Finalize.
const char* kExitCode = R"(--------------------------------------------------------------------------
Primary job  terminated normally, but 1 process returned
a non-zero exit code. Per user-direction, the job has been aborted.
--------------------------------------------------------------------------
--------------------------------------------------------------------------
mpirun detected that one or more processes exited with non-zero status, thus causing
the job to be terminated. The first process to do so was:

  Process name: [[30570,1],1]
  Exit code:    4
--------------------------------------------------------------------------)";

// MPI_Abort(MPI_COMM_WORLD, 5) on rank 1.
const char* kAbort = R"(--------------------------------------------------------------------------
MPI_ABORT was invoked on rank 1 in communicator MPI_COMM_WORLD
with errorcode 5.

NOTE: invoking MPI_ABORT causes Open MPI to kill all MPI processes.
You may or may not see output from other processes, depending on
exactly when Open MPI kills them.
--------------------------------------------------------------------------)";

// exit(0) on rank 1 without MPI_Finalize while rank 0 waits in a barrier.
const char* kImproper = R"(--------------------------------------------------------------------------
mpirun has exited due to process rank 1 with PID 0 on
node vm exiting improperly. There are three reasons this could occur:

1. this process did not call "init" before exiting, but others in
the job did. This can cause a job to hang indefinitely while it waits
for all processes to call "init". By rule, if one process calls "init",
then ALL processes must call "init" prior to termination.

2. this process called "init", but exited without calling "finalize".
By rule, all processes that call "init" MUST call "finalize" prior to
exiting or it will be considered an "abnormal termination"

3. this process called "MPI_Abort" or "orte_abort" and the mca parameter
orte_create_session_dirs is set to false. In this case, the run-time cannot
detect that the abort call was an abnormal termination. Hence, the only
error message you will receive is this one.

This may have caused other processes in the application to be
terminated by signals sent by mpirun (as reported here).

You can avoid this message by specifying -quiet on the mpirun command line.
--------------------------------------------------------------------------)";

// mpirun -np 2 /nonexistent/prog
const char* kLaunchError = R"(2 total processes failed to start
--------------------------------------------------------------------------
mpirun was unable to launch the specified application as it could not access
or execute an executable:

Executable: /nonexistent/prog
Node: vm

while attempting to start process rank 0.
--------------------------------------------------------------------------)";

std::optional<LauncherFailure> parse(const std::string& text, bool finish = true) {
    LauncherFailureParser p;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line))
        p.feed(line);
    if (finish)
        p.finish();
    return p.failure();
}

} // namespace

TEST(LauncherFailureParser, SignalFromOpenMpi) {
    const auto f = parse(kSignalled);
    ASSERT_TRUE(f);
    EXPECT_EQ(f->kind, LauncherFailure::Kind::Signal);
    EXPECT_EQ(f->rank, 1);
    EXPECT_EQ(f->host, "vm");
    EXPECT_EQ(f->pid, 0);
    EXPECT_EQ(f->signal, 9);
    EXPECT_EQ(f->describe(), "rank 1 on vm was killed by signal 9 (SIGKILL)");
}

TEST(LauncherFailureParser, SignalWithPidAndOutsideABlock) {
    const auto f = parse("mpirun noticed that process rank 3 with PID 4242 on node hostA exited on signal 11 "
                         "(Segmentation fault).");
    ASSERT_TRUE(f);
    EXPECT_EQ(f->rank, 3);
    EXPECT_EQ(f->pid, 4242);
    EXPECT_EQ(f->host, "hostA");
    EXPECT_EQ(f->describe(), "rank 3 on hostA was killed by signal 11 (SIGSEGV)");
}

TEST(LauncherFailureParser, ExitCodeFromOpenMpi) {
    const auto f = parse(kExitCode);
    ASSERT_TRUE(f);
    EXPECT_EQ(f->kind, LauncherFailure::Kind::ExitCode);
    EXPECT_EQ(f->rank, 1);
    ASSERT_TRUE(f->exit_code);
    EXPECT_EQ(*f->exit_code, 4);
    EXPECT_TRUE(f->host.empty()); // Open MPI does not say; the supervisor knows from run_start
    EXPECT_EQ(f->describe("hostA"), "rank 1 on hostA exited with code 4");
    EXPECT_EQ(f->describe(), "rank 1 exited with code 4");
}

TEST(LauncherFailureParser, ExitCodeEvenWhenTheBlockIsNotClosed) {
    std::string text = kExitCode;
    text.erase(text.rfind('\n')); // output ended before the closing line of dashes
    EXPECT_FALSE(parse(text, false));
    const auto f = parse(text, true);
    ASSERT_TRUE(f);
    EXPECT_EQ(*f->exit_code, 4);
}

TEST(LauncherFailureParser, AbortFromOpenMpi) {
    const auto f = parse(kAbort);
    ASSERT_TRUE(f);
    EXPECT_EQ(f->kind, LauncherFailure::Kind::Abort);
    EXPECT_EQ(f->rank, 1);
    EXPECT_EQ(*f->exit_code, 5);
    EXPECT_EQ(f->describe("vm"), "rank 1 on vm called MPI_Abort with error code 5");
}

TEST(LauncherFailureParser, ImproperExitFromOpenMpi) {
    const auto f = parse(kImproper);
    ASSERT_TRUE(f);
    EXPECT_EQ(f->kind, LauncherFailure::Kind::ImproperExit);
    EXPECT_EQ(f->rank, 1);
    EXPECT_EQ(f->host, "vm");
    EXPECT_NE(f->describe().find("without calling MPI_Finalize"), std::string::npos);
}

TEST(LauncherFailureParser, LaunchErrorFromOpenMpi) {
    const auto f = parse(kLaunchError);
    ASSERT_TRUE(f);
    EXPECT_EQ(f->kind, LauncherFailure::Kind::LaunchError);
    EXPECT_EQ(f->executable, "/nonexistent/prog");
    EXPECT_EQ(f->host, "vm");
    EXPECT_EQ(f->rank, 0);
    EXPECT_NE(f->describe().find("could not start /nonexistent/prog on vm"), std::string::npos);
}

TEST(LauncherFailureParser, SlurmMessages) {
    auto f = parse("srun: error: gpu-12: task 5: Exited with exit code 3");
    ASSERT_TRUE(f);
    EXPECT_EQ(f->kind, LauncherFailure::Kind::ExitCode);
    EXPECT_EQ(f->rank, 5);
    EXPECT_EQ(f->host, "gpu-12");
    EXPECT_EQ(*f->exit_code, 3);
    f = parse("srun: error: gpu-3: tasks 2-3: Segmentation fault (core dumped)");
    ASSERT_TRUE(f);
    EXPECT_EQ(f->kind, LauncherFailure::Kind::Signal);
    EXPECT_EQ(f->rank, 2);
    EXPECT_EQ(f->signal, 11);
    EXPECT_FALSE(parse("srun: error: gpu-3: task 1: Something unheard of"));
    EXPECT_FALSE(parse("srun: Job step aborted: Waiting up to 32 seconds for job step to finish."));
}

TEST(LauncherFailureParser, KeepsTheFirstFailure) {
    const auto f = parse(std::string(kSignalled) + "\n" + kExitCode);
    ASSERT_TRUE(f);
    EXPECT_EQ(f->kind, LauncherFailure::Kind::Signal);
}

TEST(LauncherFailureParser, UnrelatedOutputIsNoFailure) {
    EXPECT_FALSE(parse("mpirun: Forwarding signal 10 to job"));
    EXPECT_FALSE(parse("--------------------------------------------------------------------------\n"
                       "WARNING: There was an error initializing an OpenFabrics device.\n"
                       "--------------------------------------------------------------------------"));
    EXPECT_FALSE(parse("mpirun noticed that process rank x with PID 0 on node vm exited on signal 9 (Killed)."));
}

TEST(LauncherFailureParser, DemuxFeedsOnlyTheLaunchersLines) {
    OutputDemux demux(LauncherFormat::OpenMpi);
    auto ignore = [](const DemuxedLine&) {};
    // A rank printing the text is not the launcher reporting it.
    demux.feed(OutputStream::Stdout,
               "[1,0]<stdout>:mpirun noticed that process rank 1 with PID 7 on node x exited on signal 9 (Killed).",
               ignore);
    EXPECT_FALSE(demux.failure());
    std::istringstream in(kSignalled);
    std::string line;
    while (std::getline(in, line))
        demux.feed(OutputStream::Stderr, line, ignore);
    demux.finish(ignore);
    ASSERT_TRUE(demux.failure());
    EXPECT_EQ(demux.failure()->rank, 1);
}

// A host mpirun cannot reach: ssh's line, then Open MPI's daemon block. The host and ssh's words
// are the failure, not "mpirun exited with code 255".
TEST(LauncherFailureParser, SshFailuresNameTheHost) {
    const char* daemons = R"(ssh: connect to host node2 port 22: Connection refused
--------------------------------------------------------------------------
ORTE was unable to reliably start one or more daemons.
This usually is caused by:

* not finding the required libraries and/or binaries on
  one or more nodes.
--------------------------------------------------------------------------)";
    auto f = parse(daemons);
    ASSERT_TRUE(f);
    EXPECT_EQ(f->kind, LauncherFailure::Kind::Unreachable);
    EXPECT_EQ(f->host, "node2");
    EXPECT_EQ(f->describe("thishost"),
              "node2: ssh: connect to host node2 port 22: Connection refused; nothing was started there (nothing "
              "answers ssh there: start sshd on node2, or set its port (ssh.port in the profile, or ~/.ssh/config))");

    f = parse("ssh: Could not resolve hostname nodex: Name or service not known");
    ASSERT_TRUE(f);
    EXPECT_EQ(f->host, "nodex");
    EXPECT_NE(f->describe("thishost").find("(the name nodex does not resolve here: check its spelling"),
              std::string::npos) << f->describe("thishost");
    f = parse("root@node3: Permission denied (publickey).");
    ASSERT_TRUE(f);
    EXPECT_EQ(f->host, "node3");
    EXPECT_EQ(f->message, "root@node3: Permission denied (publickey).");
    EXPECT_NE(f->describe("thishost").find("check that `ssh node3 true` works here without a password"),
              std::string::npos) << f->describe("thishost");
    f = parse("Host key verification failed.");
    ASSERT_TRUE(f);
    EXPECT_EQ(f->describe("thishost").rfind("a host: Host key verification failed.", 0), 0u) << f->describe();
    // A rank's line that merely mentions ssh is no failure.
    EXPECT_FALSE(parse("loading data over ssh: connect to host later"));
}
