// A local run exposes nothing: while it trains, no process of it listens on an address another host
// can reach, and a [launch.env] value (a token) is on no command line; afterwards it is in none of
// the run's records (launch command, logs, output.log, supervisor.log, the store's bytes) other than
// the spec the person wrote, which the store keeps verbatim for `resume`.

#include "tests/e2e/RunProcesses.h"
#include "core/launch/RawOutput.h"

#include "core/util/Files.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

using namespace parallax;
using namespace parallax::testing;

namespace {

struct BoundSocket {
    std::string protocol; // tcp, tcp6, udp, udp6
    std::string address;  // printable, with the port
    bool loopback = false;
};

// One 32-bit word of /proc/net/tcp*'s addresses: the bytes in memory order, printed as a host-order
// number.
void wordBytes(const std::string& hex, unsigned char* out) {
    const uint32_t word = static_cast<uint32_t>(std::stoul(hex, nullptr, 16));
    std::memcpy(out, &word, 4);
}

// The listening TCP sockets and the bound UDP sockets of this network namespace, by inode.
std::map<std::string, BoundSocket> boundSockets() {
    std::map<std::string, BoundSocket> out;
    for (const std::string protocol : {"tcp", "tcp6", "udp", "udp6"}) {
        std::ifstream in("/proc/net/" + protocol);
        std::string line;
        std::getline(in, line); // header
        while (std::getline(in, line)) {
            std::istringstream f(line);
            std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
            f >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >> timeout >> inode;
            const bool tcp = protocol.rfind("tcp", 0) == 0;
            if (tcp && state != "0A") // TCP_LISTEN
                continue;
            const std::string hex = local.substr(0, local.find(':'));
            const int port = std::stoi(local.substr(local.find(':') + 1), nullptr, 16);
            BoundSocket s;
            s.protocol = protocol;
            char text[INET6_ADDRSTRLEN] = {};
            if (hex.size() == 8) {
                unsigned char b[4];
                wordBytes(hex, b);
                inet_ntop(AF_INET, b, text, sizeof text);
                s.loopback = b[0] == 127;
            } else {
                unsigned char b[16];
                for (int i = 0; i < 4; ++i)
                    wordBytes(hex.substr(static_cast<size_t>(8 * i), 8), b + 4 * i);
                in6_addr a;
                std::memcpy(&a, b, 16);
                inet_ntop(AF_INET6, &a, text, sizeof text);
                s.loopback = IN6_IS_ADDR_LOOPBACK(&a) || (IN6_IS_ADDR_V4MAPPED(&a) && b[12] == 127);
            }
            s.address = std::string(text) + ":" + std::to_string(port);
            out[inode] = s;
        }
    }
    return out;
}

// The bound sockets a process holds (through /proc/PID/fd).
std::vector<BoundSocket> socketsOf(pid_t pid, const std::map<std::string, BoundSocket>& bound) {
    std::vector<BoundSocket> out;
    const std::string fdDir = "/proc/" + std::to_string(pid) + "/fd";
    std::vector<std::string> fds;
    try {
        fds = listDirectory(fdDir);
    } catch (const FileError&) {
        return out;
    }
    for (const std::string& fd : fds) {
        char target[128] = {};
        const ssize_t n = readlink((fdDir + "/" + fd).c_str(), target, sizeof target - 1);
        const std::string link(target, n > 0 ? static_cast<size_t>(n) : 0);
        if (link.rfind("socket:[", 0) != 0)
            continue;
        const auto it = bound.find(link.substr(8, link.size() - 9));
        if (it != bound.end())
            out.push_back(it->second);
    }
    return out;
}

std::string readBytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Where `secret` stands in `bytes` outside a verbatim copy of `spec` (the SQLite pages keep a
// short text as one piece); empty when nowhere.
std::vector<size_t> strayCopies(const std::string& bytes, const std::string& secret, const std::string& spec) {
    const size_t inSpec = spec.find(secret);
    std::vector<size_t> out;
    for (size_t at = bytes.find(secret); at != std::string::npos; at = bytes.find(secret, at + 1)) {
        const bool partOfSpec = at >= inSpec && bytes.compare(at - inSpec, spec.size(), spec) == 0;
        if (!partOfSpec)
            out.push_back(at);
    }
    return out;
}

std::string around(const std::string& bytes, size_t at) {
    std::string s = bytes.substr(at >= 60 ? at - 60 : 0, 160);
    for (char& c : s)
        if (static_cast<unsigned char>(c) < 32 || static_cast<unsigned char>(c) > 126)
            c = '.';
    return s;
}

} // namespace

TEST(Exposure, ALocalRunListensOnLoopbackOnlyAndItsSecretIsOnNoCommandLineOrRecord) {
    TempDir tmp;
    const std::string store = tmp.path() + "/parallax.db";
    const std::string specPath = tmp.path() + "/exposed.toml";
    std::random_device rd;
    std::ostringstream secretText;
    secretText << "tok" << std::hex << rd() << rd() << "x";
    const std::string secret = secretText.str();
    const std::string spec = longTinyGptSpec("exposed", "[launch.env]\nPARALLAX_TEST_TOKEN = \"" + secret + "\"\n");
    std::ofstream(specPath) << spec;

    // Detached, so that the supervisor's own output goes to supervisor.log and is checked too.
    const ProcessResult started = runProcess({cliExecutable(), "--store", store, "run", "--detach", specPath});
    ASSERT_EQ(started.exitCode, 0) << started.output;
    const std::optional<RunRecord> run = waitForRun(
        store, "exposed", [](RunStore& db, const RunRecord& r) { return db.metrics(r.id).size() >= 3; },
        std::chrono::seconds(120));
    ASSERT_TRUE(run.has_value()) << "the run did not train";
    const std::string runDir = run->run_dir;

    const std::vector<pid_t> mpirun = runProcesses(runDir, "mpirun");
    const std::vector<pid_t> workers = runProcesses(runDir, "parallax-worker");
    ASSERT_EQ(mpirun.size(), 1u);
    ASSERT_EQ(workers.size(), 2u);

    // (1) Listening sockets: mpirun has some (its out-of-band and PMIx listeners); none of any
    // process of the run is on an address beyond loopback.
    const std::map<std::string, BoundSocket> bound = boundSockets();
    size_t mpirunListeners = 0;
    std::vector<pid_t> all = mpirun;
    all.insert(all.end(), workers.begin(), workers.end());
    for (pid_t pid : all) {
        for (const BoundSocket& s : socketsOf(pid, bound)) {
            if (pid == mpirun.front())
                ++mpirunListeners;
            EXPECT_TRUE(s.loopback) << commandName(pid) << " (pid " << pid << ") listens on " << s.protocol << " "
                                    << s.address;
        }
    }
    EXPECT_GT(mpirunListeners, 0u) << "mpirun's listeners were not found: the check above saw nothing";

    // (2) Command lines: the value is on none; the ranks have it in their environment all the same.
    for (pid_t pid : all) {
        const std::string cmdline = procFile(pid, "cmdline");
        EXPECT_EQ(cmdline.find(secret), std::string::npos)
            << commandName(pid) << " (pid " << pid << ") has the launch.env value on its command line";
    }
    for (pid_t pid : workers)
        EXPECT_NE(procFile(pid, "environ").find("PARALLAX_TEST_TOKEN=" + secret + '\0'), std::string::npos)
            << "rank pid " << pid << " did not get PARALLAX_TEST_TOKEN";

    const ProcessResult stop = runProcess({cliExecutable(), "--store", store, "stop", "exposed", "--wait"});
    ASSERT_EQ(stop.exitCode, 3) << "stop --wait ends with the stopped run's exit code: " << stop.output;
    EXPECT_TRUE(waitUntil([&] { return processesMatching(runDir).empty(); }, std::chrono::seconds(20)));

    // (3) Records: the launch command names the variable only and stays a command to paste.
    RunStore db(store);
    const std::optional<RunRecord> ended = db.run(run->id);
    ASSERT_TRUE(ended.has_value());
    EXPECT_EQ(ended->launch_command.find(secret), std::string::npos) << ended->launch_command;
    EXPECT_NE(ended->launch_command.find("PARALLAX_TEST_TOKEN=\"$PARALLAX_TEST_TOKEN\""), std::string::npos)
        << ended->launch_command;
    EXPECT_NE(ended->launch_command.find("-x PARALLAX_TEST_TOKEN "), std::string::npos) << ended->launch_command;
    const std::vector<LogRow> logs = db.logs(run->id);
    ASSERT_FALSE(logs.empty());
    for (const LogRow& row : logs)
        EXPECT_EQ(row.message.find(secret), std::string::npos) << "log line of rank " << row.rank << ": " << row.message;
    for (const std::string file : {kCompressedOutputName, "supervisor.log"}) {
        const std::string path = runDir + "/" + file;
        ASSERT_TRUE(isRegularFile(path)) << path;
        // The raw output is read as its readers read it, uncompressed.
        const std::string text = file == kCompressedOutputName ? readRawOutput(path) : readBytes(path);
        EXPECT_EQ(text.find(secret), std::string::npos) << file << ": " << around(text, text.find(secret));
    }
    for (const std::string& file : {store, store + "-wal"}) {
        const std::string bytes = readBytes(file);
        for (size_t at : strayCopies(bytes, secret, spec))
            ADD_FAILURE() << file << " holds the value outside the run's spec at byte " << at << ": "
                          << around(bytes, at);
    }
}

// A secret passed by name (launch.forward_env) from the environment the run is started from: the
// ranks get it, and no byte of the store or of the run's folder holds it, the spec included.
TEST(Exposure, AForwardedSecretIsKeptNowhere) {
    TempDir tmp;
    const std::string store = tmp.path() + "/parallax.db";
    const std::string specPath = tmp.path() + "/forwarded.toml";
    std::random_device rd;
    std::ostringstream secretText;
    secretText << "fwd" << std::hex << rd() << rd() << "y";
    const std::string secret = secretText.str();
    ::setenv("PARALLAX_TEST_FORWARDED_TOKEN", secret.c_str(), 1);
    std::ofstream(specPath) << longTinyGptSpec("forwarded", "[launch]\nforward_env = [\"PARALLAX_TEST_FORWARDED_TOKEN\"]\n");

    const ProcessResult started = runProcess({cliExecutable(), "--store", store, "run", "--detach", specPath});
    ::unsetenv("PARALLAX_TEST_FORWARDED_TOKEN");
    ASSERT_EQ(started.exitCode, 0) << started.output;
    const std::optional<RunRecord> run = waitForRun(
        store, "forwarded", [](RunStore& db, const RunRecord& r) { return db.metrics(r.id).size() >= 2; },
        std::chrono::seconds(120));
    ASSERT_TRUE(run.has_value()) << "the run did not train";
    const std::vector<pid_t> workers = runProcesses(run->run_dir, "parallax-worker");
    ASSERT_EQ(workers.size(), 2u);
    for (pid_t pid : workers)
        EXPECT_NE(procFile(pid, "environ").find("PARALLAX_TEST_FORWARDED_TOKEN=" + secret + '\0'), std::string::npos)
            << "rank pid " << pid << " did not get the forwarded variable";
    const ProcessResult stop = runProcess({cliExecutable(), "--store", store, "stop", "forwarded", "--wait"});
    ASSERT_EQ(stop.exitCode, 3) << stop.output;
    EXPECT_TRUE(waitUntil([&] { return processesMatching(run->run_dir).empty(); }, std::chrono::seconds(20)));

    std::vector<std::string> files = {store, store + "-wal", store + ".logindex", store + ".logindex-wal"};
    for (const std::string& name : listDirectory(run->run_dir))
        if (isRegularFile(joinPath(run->run_dir, name))) files.push_back(joinPath(run->run_dir, name));
    for (const std::string& file : files) {
        const std::string bytes = readBytes(file);
        const size_t at = bytes.find(secret);
        EXPECT_EQ(at, std::string::npos) << file << " holds the forwarded value: " << around(bytes, at);
    }
    EXPECT_NE(RunStore(store).run(run->id)->launch_command.find("-x PARALLAX_TEST_FORWARDED_TOKEN"), std::string::npos);

    // Not exported: the run does not start, and says which variable to export.
    const ProcessResult missing = runProcess({cliExecutable(), "--store", store, "run", specPath});
    EXPECT_EQ(missing.exitCode, 2) << missing.output;
    EXPECT_NE(missing.output.find("PARALLAX_TEST_FORWARDED_TOKEN is not set"), std::string::npos) << missing.output;
}
