#include "tests/support/Process.h"

#include "core/util/Files.h"

#include <cstdlib>
#include <fcntl.h>
#include <fstream>
#include <random>
#include <spawn.h>
#include <stdexcept>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace parallax::testing {

namespace {

void allowMpiAsRoot() {
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
}

pid_t spawn(const std::vector<std::string>& args, int outFd) {
    std::vector<std::string> copy = args;
    std::vector<char*> argv;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, outFd, 1);
    posix_spawn_file_actions_adddup2(&actions, outFd, 2);
    pid_t pid = 0;
    allowMpiAsRoot();
    const int rc = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) throw std::runtime_error("cannot start " + args.front());
    return pid;
}

int exitCodeOf(int status) {
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

} // namespace

ProcessResult runProcess(const std::vector<std::string>& argv) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
    const pid_t pid = spawn(argv, fds[1]);
    close(fds[1]);
    ProcessResult r;
    char buf[65536];
    for (;;) {
        const ssize_t n = read(fds[0], buf, sizeof buf);
        if (n > 0) r.output.append(buf, static_cast<size_t>(n));
        else if (n == 0 || errno != EINTR) break;
    }
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    r.exitCode = exitCodeOf(status);
    return r;
}

BackgroundProcess startProcess(const std::vector<std::string>& argv, const std::string& outputFile) {
    const int fd = open(outputFile.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) throw std::runtime_error("cannot write " + outputFile);
    BackgroundProcess p;
    p.pid = spawn(argv, fd);
    p.outputFile = outputFile;
    close(fd);
    return p;
}

int BackgroundProcess::wait() {
    int status = 0;
    waitpid(pid, &status, 0);
    return exitCodeOf(status);
}

std::string BackgroundProcess::output() const {
    std::ifstream in(outputFile);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TempDir::TempDir() {
    std::random_device rd;
    const char* tmp = std::getenv("TMPDIR");
    m_path = joinPath(tmp && *tmp ? tmp : "/tmp",
                      "parallax-test-" + std::to_string(getpid()) + "-" + std::to_string(rd()));
    createDirectories(m_path);
}

TempDir::~TempDir() {
    try {
        removeAll(m_path);
    } catch (const FileError&) {
        // A test's scratch folder that cannot be removed is left for the system's tmp cleaner.
    }
}

std::string buildDir() {
    const char* v = std::getenv("PARALLAX_BUILD_DIR");
    if (!v) throw std::runtime_error("PARALLAX_BUILD_DIR is not set; run the tests through ctest");
    return v;
}

std::string sourceDir() {
    const char* v = std::getenv("PARALLAX_SOURCE_DIR");
    if (!v) throw std::runtime_error("PARALLAX_SOURCE_DIR is not set; run the tests through ctest");
    return v;
}

std::vector<pid_t> processesMatching(const std::string& needle) {
    std::vector<pid_t> out;
    for (const std::string& name : listDirectory("/proc")) {
        if (name.find_first_not_of("0123456789") != std::string::npos) continue;
        const std::string entry = "/proc/" + name;
        std::ifstream in(entry + "/cmdline", std::ios::binary);
        std::string cmd((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        for (char& c : cmd)
            if (c == '\0') c = ' ';
        const pid_t pid = static_cast<pid_t>(std::stol(name));
        if (pid != getpid() && cmd.find(needle) != std::string::npos) {
            // Zombies have an empty command line already; skip them by their state too.
            std::ifstream stat(entry + "/stat");
            std::string s;
            std::getline(stat, s);
            const auto close = s.rfind(')');
            if (close != std::string::npos && close + 2 < s.size() && s[close + 2] == 'Z') continue;
            out.push_back(pid);
        }
    }
    return out;
}

} // namespace parallax::testing
