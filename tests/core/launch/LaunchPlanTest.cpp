#include "core/launch/LaunchPlan.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <stdexcept>

using namespace parallax;

namespace {

using Argv = std::vector<std::string>;
using Env = std::map<std::string, std::string>;

LaunchContext context(int cores, bool root) {
    LaunchContext c;
    c.worker = "/opt/parallax/bin/parallax-worker";
    c.spec_path = "/data/runs/7/spec.toml";
    c.run_dir = "/data/runs/7";
    c.cores = cores;
    c.root = root;
    c.loopback_library = "/opt/parallax/bin/libparallax-loopback.so";
    c.preload = "";
    return c;
}

// What a local run's environment always has: nothing of it listens beyond loopback.
Env localNetwork() {
    return {{"LD_PRELOAD", "/opt/parallax/bin/libparallax-loopback.so"},
            {"OMPI_MCA_btl", "self,vader"},
            {"OMPI_MCA_oob_tcp_if_include", "lo"},
            {"OMPI_MCA_pml", "ob1"}};
}

Env with(Env env, const Env& more) {
    for (const auto& [name, value] : more)
        env[name] = value;
    return env;
}

const Env kRoot = {{"OMPI_ALLOW_RUN_AS_ROOT", "1"}, {"OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"}};

RunSpec spec(int64_t dp, int64_t tp = 1, int64_t pp = 1) {
    RunSpec s;
    s.parallel.dp = dp;
    s.parallel.tp = tp;
    s.parallel.pp = pp;
    return s;
}

} // namespace

TEST(LaunchPlan, LocalWithinTheCores) {
    const LaunchPlan p = makeLaunchPlan(spec(2, 2), context(16, false));
    EXPECT_EQ(p.argv, (Argv{"mpirun", "-np", "4", "--tag-output", "--bind-to", "none", "-x", "OMP_NUM_THREADS=4",
                            "/opt/parallax/bin/parallax-worker", "--spec", "/data/runs/7/spec.toml", "--run-dir",
                            "/data/runs/7"}));
    EXPECT_EQ(p.env, localNetwork());
    EXPECT_TRUE(p.hidden.empty());
    EXPECT_EQ(p.format, LauncherFormat::OpenMpi);
}

TEST(LaunchPlan, LocalOversubscribedAsRootWithEnvAndResume) {
    RunSpec s = spec(2);
    s.launch.bind = Bind::Core;
    s.launch.env = {{"NCCL_DEBUG", "INFO"}, {"MY_FLAGS", "a b"}};
    s.launch.mpirun_args = {"--mca", "btl", "self,vader"};
    LaunchContext c = context(1, true);
    c.resume_dir = "/data/runs/3/checkpoints";
    c.worker_args = {"--verbose"};
    const LaunchPlan p = makeLaunchPlan(s, c);
    // Two ranks on one core: binding each to a core must be allowed to put both on it.
    EXPECT_EQ(p.argv, (Argv{"mpirun", "-np", "2", "--tag-output", "--oversubscribe", "--bind-to", "core:overload-allowed", "-x",
                            "OMP_NUM_THREADS=1", "-x", "MY_FLAGS", "-x", "NCCL_DEBUG", "--mca", "btl", "self,vader",
                            "/opt/parallax/bin/parallax-worker", "--spec", "/data/runs/7/spec.toml", "--run-dir",
                            "/data/runs/7", "--resume", "/data/runs/3/checkpoints", "--verbose"}));
    EXPECT_EQ(p.env, with(with(localNetwork(), kRoot), {{"NCCL_DEBUG", "INFO"}, {"MY_FLAGS", "a b"}}));
    EXPECT_EQ(p.hidden, (std::set<std::string>{"MY_FLAGS", "NCCL_DEBUG"}));
    EXPECT_EQ(p.commandLine(),
              "LD_PRELOAD=/opt/parallax/bin/libparallax-loopback.so MY_FLAGS=\"$MY_FLAGS\" NCCL_DEBUG=\"$NCCL_DEBUG\" "
              "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader "
              "OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_pml=ob1 mpirun -np 2 --tag-output --oversubscribe "
              "--bind-to core:overload-allowed -x OMP_NUM_THREADS=1 -x MY_FLAGS -x NCCL_DEBUG --mca btl self,vader "
              "/opt/parallax/bin/parallax-worker --spec /data/runs/7/spec.toml --run-dir /data/runs/7 --resume "
              "/data/runs/3/checkpoints --verbose");
}

TEST(LaunchPlan, LaunchEnvValuesAreOnNoCommandLine) {
    RunSpec s = spec(2);
    s.launch.env = {{"WANDB_API_KEY", "s3cr3t-value"}, {"OMP_NUM_THREADS", "3"}, {"OMPI_MCA_btl", "tcp,self"}};
    const LaunchPlan p = makeLaunchPlan(s, context(8, false));
    for (const std::string& a : p.argv) {
        EXPECT_EQ(a.find("s3cr3t"), std::string::npos) << a;
        EXPECT_NE(a, "OMP_NUM_THREADS=4") << "launch.env's OMP_NUM_THREADS replaces the computed one";
    }
    EXPECT_EQ(p.commandLine().find("s3cr3t"), std::string::npos) << p.commandLine();
    EXPECT_NE(p.commandLine().find("WANDB_API_KEY=\"$WANDB_API_KEY\" "), std::string::npos) << p.commandLine();
    EXPECT_NE(p.commandLine().find(" -x WANDB_API_KEY "), std::string::npos) << p.commandLine();
    EXPECT_EQ(p.env.at("WANDB_API_KEY"), "s3cr3t-value");
    EXPECT_EQ(p.env.at("OMP_NUM_THREADS"), "3");
    EXPECT_EQ(p.env.at("OMPI_MCA_btl"), "tcp,self") << "launch.env overrides the local defaults";
    EXPECT_EQ(p.hidden, (std::set<std::string>{"OMPI_MCA_btl", "OMP_NUM_THREADS", "WANDB_API_KEY"}));
}

TEST(LaunchPlan, ForwardedVariablesComeFromThisEnvironmentByName) {
    RunSpec s = spec(2);
    s.launch.forward_env = {"PARALLAX_PLAN_TEST_TOKEN"};
    ::unsetenv("PARALLAX_PLAN_TEST_TOKEN");
    try {
        makeLaunchPlan(s, context(8, false));
        ADD_FAILURE() << "a variable that is not set was forwarded";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("launch.forward_env: PARALLAX_PLAN_TEST_TOKEN is not set"),
                  std::string::npos)
            << e.what();
    }
    ::setenv("PARALLAX_PLAN_TEST_TOKEN", "from-the-shell", 1);
    const LaunchPlan p = makeLaunchPlan(s, context(8, false));
    ::unsetenv("PARALLAX_PLAN_TEST_TOKEN");
    EXPECT_EQ(p.env.at("PARALLAX_PLAN_TEST_TOKEN"), "from-the-shell");
    EXPECT_TRUE(p.hidden.count("PARALLAX_PLAN_TEST_TOKEN"));
    EXPECT_NE(p.commandLine().find(" -x PARALLAX_PLAN_TEST_TOKEN "), std::string::npos) << p.commandLine();
    EXPECT_EQ(p.commandLine().find("from-the-shell"), std::string::npos) << p.commandLine();
}

TEST(LaunchPlan, LocalRunsListenOnLoopbackOnly) {
    RunSpec s = spec(2);
    s.launch.device = Device::Cuda;
    LaunchContext c = context(8, false);
    c.preload = "/usr/lib/libjemalloc.so.2";
    const LaunchPlan p = makeLaunchPlan(s, c);
    EXPECT_EQ(p.env, with(localNetwork(), {{"NCCL_SOCKET_IFNAME", "lo"},
                                           {"LD_PRELOAD", "/opt/parallax/bin/libparallax-loopback.so:"
                                                          "/usr/lib/libjemalloc.so.2"}}));

    // Without the library beside the executable (the test binary has none) the MCA defaults stay.
    LaunchContext bare = c;
    bare.loopback_library.clear();
    const LaunchPlan p2 = makeLaunchPlan(s, bare);
    EXPECT_EQ(p2.env.count("LD_PRELOAD"), 0u);
    EXPECT_EQ(p2.env.at("OMPI_MCA_btl"), "self,vader");
    ASSERT_EQ(p2.warnings.size(), 1u); // said, for the run's log
    EXPECT_NE(p2.warnings[0].find("libparallax-loopback.so is neither beside"), std::string::npos) << p2.warnings[0];
    EXPECT_TRUE(p.warnings.empty());

    // Hosts need the network: none of it there.
    s.launch.target = Target::Hosts;
    s.launch.hosts = {"node1:8"};
    EXPECT_TRUE(makeLaunchPlan(s, c).env.empty());
}

TEST(LaunchPlan, ExplicitProcessCountThreadsAndLauncher) {
    RunSpec s = spec(1);
    s.launch.processes = 3;
    s.launch.threads_per_rank = 5;
    LaunchContext c = context(64, false);
    c.launcher = "/usr/lib64/openmpi/bin/mpirun";
    const LaunchPlan p = makeLaunchPlan(s, c);
    EXPECT_EQ(p.argv, (Argv{"/usr/lib64/openmpi/bin/mpirun", "-np", "3", "--tag-output", "--bind-to", "none", "-x",
                            "OMP_NUM_THREADS=5", "/opt/parallax/bin/parallax-worker", "--spec",
                            "/data/runs/7/spec.toml", "--run-dir", "/data/runs/7"}));
}

TEST(LaunchPlan, Hosts) {
    RunSpec s = spec(4, 4);
    s.launch.target = Target::Hosts;
    s.launch.hosts = {"node1:8", "node2:8"};
    s.launch.bind = Bind::Socket;
    const LaunchPlan p = makeLaunchPlan(s, context(4, true));
    EXPECT_EQ(p.argv, (Argv{"mpirun", "-np", "16", "--host", "node1:8,node2:8", "--tag-output", "--bind-to", "socket",
                            "-x", "OMP_NUM_THREADS=1", "--mca", "parallax_run_dir", "/data/runs/7",
                            "/opt/parallax/bin/parallax-worker", "--spec", "/data/runs/7/spec.toml", "--run-dir",
                            "/data/runs/7"}));
    EXPECT_EQ(p.env, kRoot);

    s.launch.hosts.clear();
    EXPECT_THROW(makeLaunchPlan(s, context(4, false)), std::invalid_argument);
}

TEST(LaunchPlan, Slurm) {
    RunSpec s = spec(8, 1, 2);
    s.launch.target = Target::Slurm;
    s.launch.partition = "gpu";
    s.launch.account = "ml-team";
    s.launch.time_limit = "04:00:00";
    s.launch.gpus_per_node = 8;
    s.launch.threads_per_rank = 6;
    s.launch.env = {{"NCCL_IB_HCA", "mlx5"}};
    s.launch.mpirun_args = {"--exclusive"};
    s.launch.nodes = 2;
    s.launch.tasks_per_node = 8;
    s.launch.qos = "high";
    s.launch.constraint = "h200";
    LaunchContext c = context(2, true);
    c.slurm_mpi = "pmix";
    const LaunchPlan p = makeLaunchPlan(s, c);
    EXPECT_EQ(p.argv, (Argv{"srun", "--label", "-n", "16", "--mpi=pmix", "--nodes=2", "--ntasks-per-node=8",
                            "--partition=gpu", "--account=ml-team", "--qos=high", "--constraint=h200",
                            "--time=04:00:00", "--gpus-per-node=8", "--signal=USR1@60", "--cpus-per-task=6", "--exclusive",
                            "/opt/parallax/bin/parallax-worker", "--spec", "/data/runs/7/spec.toml", "--run-dir",
                            "/data/runs/7"}));
    EXPECT_EQ(p.env, (Env{{"NCCL_IB_HCA", "mlx5"}, {"OMP_NUM_THREADS", "6"}}));
    EXPECT_EQ(p.hidden, (std::set<std::string>{"NCCL_IB_HCA"}));
    EXPECT_EQ(p.format, LauncherFormat::Slurm);
    EXPECT_EQ(p.commandLine().substr(0, 58), "NCCL_IB_HCA=\"$NCCL_IB_HCA\" OMP_NUM_THREADS=6 srun --label ");
}

TEST(LaunchPlan, SlurmMinimal) {
    RunSpec s = spec(2);
    s.launch.target = Target::Slurm;
    const LaunchPlan p = makeLaunchPlan(s, context(2, false));
    EXPECT_EQ(p.argv, (Argv{"srun", "--label", "-n", "2", "/opt/parallax/bin/parallax-worker", "--spec",
                            "/data/runs/7/spec.toml", "--run-dir", "/data/runs/7"}));
    EXPECT_TRUE(p.env.empty());
}

// A batch job: the allocation's options go on sbatch, the script runs srun inside it.
TEST(LaunchPlan, SlurmBatch) {
    RunSpec s = spec(2, 1, 2);
    s.name = "my run/1";
    s.launch.target = Target::Slurm;
    s.launch.slurm_mode = SlurmMode::Batch;
    s.launch.partition = "gpu";
    s.launch.time_limit = "01:00:00";
    s.launch.signal_margin_s = 90;
    s.launch.threads_per_rank = 3;
    s.launch.nodes = 2;
    s.launch.tasks_per_node = 2;
    s.launch.mpirun_args = {"--exclusive"};
    s.launch.env = {{"HF_HOME", "/data/hf"}};
    LaunchContext c = context(2, true);
    c.slurm_mpi = "pmix";
    const LaunchPlan p = makeLaunchPlan(s, c);
    EXPECT_EQ(p.submit, (Argv{"sbatch", "--parsable", "--job-name=my_run_1", "--chdir=/data/runs/7",
                              "--output=/data/runs/7/output.log", "--open-mode=append", "-n", "4", "--nodes=2",
                              "--ntasks-per-node=2", "--partition=gpu", "--time=01:00:00", "--signal=USR1@90",
                              "--cpus-per-task=3", "/data/runs/7/job.sh"}));
    EXPECT_EQ(p.argv, (Argv{"srun", "--label", "-n", "4", "--mpi=pmix", "--cpus-per-task=3", "--exclusive",
                            "/opt/parallax/bin/parallax-worker", "--spec", "/data/runs/7/spec.toml", "--run-dir",
                            "/data/runs/7"}));
    EXPECT_EQ(p.script, "#!/bin/sh\n# The ranks of the run in /data/runs/7, in the allocation sbatch made for them.\n"
                        "exec srun --label -n 4 --mpi=pmix --cpus-per-task=3 --exclusive "
                        "/opt/parallax/bin/parallax-worker --spec /data/runs/7/spec.toml --run-dir /data/runs/7\n");
    // The environment goes to sbatch, which passes it on; a value of launch.env is in no file.
    EXPECT_EQ(p.env, (Env{{"HF_HOME", "/data/hf"}, {"OMP_NUM_THREADS", "3"}}));
    EXPECT_EQ(p.script.find("/data/hf"), std::string::npos);
    EXPECT_EQ(p.commandLine().find("HF_HOME=\"$HF_HOME\" OMP_NUM_THREADS=3 sbatch --parsable"), 0u) << p.commandLine();
    // srun mode keeps everything on srun and submits nothing.
    s.launch.slurm_mode = SlurmMode::Srun;
    EXPECT_TRUE(makeLaunchPlan(s, c).submit.empty());
}

TEST(LaunchPlan, RejectsWhatItCannotLaunch) {
    RunSpec s = spec(1);
    s.launch.target.setName("kubernetes");
    try {
        makeLaunchPlan(s, context(2, false));
        FAIL() << "expected invalid_argument";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("launch.target"), std::string::npos);
    }
    s.launch.target = Target::Local;
    s.launch.env = {{"BAD NAME", "x"}};
    EXPECT_THROW(makeLaunchPlan(s, context(2, false)), std::invalid_argument);
}

TEST(LaunchPlan, ShellQuoting) {
    EXPECT_EQ(shellQuote("plain/path-1.0:x,y=z"), "plain/path-1.0:x,y=z");
    EXPECT_EQ(shellQuote(""), "''");
    EXPECT_EQ(shellQuote("two words"), "'two words'");
    EXPECT_EQ(shellQuote("it's"), "'it'\\''s'");
    EXPECT_EQ(shellQuote("$HOME"), "'$HOME'");
    EXPECT_EQ(shellQuote("a;rm -rf"), "'a;rm -rf'");
    LaunchPlan p;
    p.argv = {"mpirun", "--spec", "/tmp/my runs/spec.toml"};
    p.env = {{"X", "1 2"}};
    EXPECT_EQ(p.commandLine(), "X='1 2' mpirun --spec '/tmp/my runs/spec.toml'");
}

TEST(LaunchPlan, HostsOfAClusterProfile) {
    RunSpec s = spec(4);
    s.launch.target = Target::Hosts;
    s.launch.cluster = "lab";
    LaunchContext c = context(8, false);
    EXPECT_THROW(makeLaunchPlan(s, c), std::invalid_argument); // the profile must be read first
    ClusterProfile lab;
    lab.hosts = {"n1:2", "n2:2"};
    lab.worker = "/opt/px/parallax-worker";
    lab.ssh.user = "alice";
    lab.ssh.port = 2222;
    lab.env = {{"NCCL_SOCKET_IFNAME", "ib0"}};
    lab.mca = {{"btl_tcp_if_include", "10.1.0.0/16"}};
    c.cluster = lab;
    ::unsetenv("OMPI_MCA_plm_rsh_args");
    ::unsetenv("OMPI_MCA_btl_tcp_if_include");
    const LaunchPlan p = makeLaunchPlan(s, c);
    const std::string line = p.commandLine();
    EXPECT_NE(line.find("--host n1:2,n2:2"), std::string::npos) << line;
    EXPECT_NE(line.find(" -x NCCL_SOCKET_IFNAME "), std::string::npos) << line;
    EXPECT_NE(line.find(" /opt/px/parallax-worker --spec "), std::string::npos) << line;
    EXPECT_EQ(p.env.at("OMPI_MCA_btl_tcp_if_include"), "10.1.0.0/16");
    EXPECT_EQ(p.env.at("OMPI_MCA_plm_rsh_args"), "-o BatchMode=yes -l alice -p 2222");
    EXPECT_EQ(p.env.at("NCCL_SOCKET_IFNAME"), "ib0");
    EXPECT_EQ(p.env.count("LD_PRELOAD"), 0u); // hosts need the network
    c.cluster->ssh.identity_file = "/home/a b/key";
    EXPECT_THROW(makeLaunchPlan(s, c), std::invalid_argument); // Open MPI splits plm_rsh_args at blanks
}

TEST(LaunchPlan, SlurmsMpiPluginIsPmixWhereOffered) {
    EXPECT_EQ(slurmMpiPlugin("MPI plugin types are...\n\tnone\n\tcray_shasta\n\tpmi2\n\tpmix\n"
                             "specific pmix plugin versions available: pmix_v4\n"),
              "pmix");
    EXPECT_EQ(slurmMpiPlugin("MPI plugin types are...\n\tnone\n\tpmi2\n"), "");
    EXPECT_EQ(slurmMpiPlugin(""), "");
}
