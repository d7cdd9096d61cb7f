#include "tests/trainer/support/WorkerRun.h"

#include "core/telemetry/TelemetryCodec.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <spawn.h>
#include <stdexcept>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;
namespace fs = std::filesystem;

namespace parallax::testing {

std::vector<double> WorkerRun::losses() const {
    std::vector<double> out;
    for (const StepEvent& s : steps) out.push_back(s.loss);
    return out;
}

std::string WorkerRun::lastCheckpoint() const {
    const fs::path dir = fs::path(runDir) / "checkpoints";
    std::vector<std::string> complete;
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) return {};
    for (const auto& e : fs::directory_iterator(dir))
        if (fs::exists(e.path() / "manifest.json")) complete.push_back(e.path().string());
    if (complete.empty()) return {};
    return *std::max_element(complete.begin(), complete.end());
}

TempDir::TempDir() {
    std::random_device rd;
    const fs::path p = fs::temp_directory_path() / ("parallax-test-" + std::to_string(getpid()) + "-" +
                                                    std::to_string(rd()));
    fs::create_directories(p);
    m_path = p.string();
}

TempDir::~TempDir() {
    std::error_code ec;
    fs::remove_all(m_path, ec);
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

std::string workerPath() {
    return buildDir() + "/app/parallax-worker";
}

WorkerRun runWorker(const std::string& specToml, int ranks, const std::string& runDir,
                    const std::vector<std::string>& extraArgs) {
    fs::create_directories(runDir);
    const std::string specPath = runDir + "/spec.toml";
    {
        std::ofstream out(specPath);
        out << specToml;
    }
    std::vector<std::string> args = {"mpirun", "-np", std::to_string(ranks), "--oversubscribe", "--bind-to", "none",
                                     "-x", "OMP_NUM_THREADS=1", workerPath(), "--spec", specPath, "--run-dir", runDir,
                                     "--threads", "1"};
    args.insert(args.end(), extraArgs.begin(), extraArgs.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);

    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    int pipeFd[2];
    if (pipe(pipeFd) != 0) throw std::runtime_error("pipe failed");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, pipeFd[1], 1);
    posix_spawn_file_actions_adddup2(&actions, pipeFd[1], 2);
    posix_spawn_file_actions_addclose(&actions, pipeFd[0]);
    pid_t pid = 0;
    const int rc = posix_spawnp(&pid, "mpirun", &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    close(pipeFd[1]);
    if (rc != 0) {
        close(pipeFd[0]);
        throw std::runtime_error("cannot start mpirun (install openmpi-bin)");
    }
    WorkerRun run;
    run.runDir = runDir;
    char buf[65536];
    ssize_t n;
    while ((n = read(pipeFd[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
        if (n > 0) run.output.append(buf, static_cast<size_t>(n));
    close(pipeFd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    run.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);

    size_t start = 0;
    while (start < run.output.size()) {
        size_t end = run.output.find('\n', start);
        if (end == std::string::npos) end = run.output.size();
        const std::string line = run.output.substr(start, end - start);
        start = end + 1;
        DecodedLine d = decodeLine(line);
        if (d.kind != DecodedLine::Kind::Event) {
            run.logs.push_back(line);
            continue;
        }
        if (auto* s = std::get_if<StepEvent>(&d.event)) run.steps.push_back(*s);
        else if (auto* sp = std::get_if<SpanEvent>(&d.event)) run.spans.push_back(*sp);
        else if (auto* l = std::get_if<LogEvent>(&d.event)) run.logs.push_back(l->level + ": " + l->message);
        else if (auto* e = std::get_if<RunEndEvent>(&d.event)) {
            if (run.endStatus.empty() || e->status == "failed") {
                run.endStatus = e->status;
                run.endReason = e->reason;
            }
        }
    }
    return run;
}

double maxRelativeDifference(const std::vector<double>& a, const std::vector<double>& b) {
    if (a.size() != b.size()) return INFINITY;
    double worst = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        const double scale = std::max({std::fabs(a[i]), std::fabs(b[i]), 1e-12});
        worst = std::max(worst, std::fabs(a[i] - b[i]) / scale);
    }
    return worst;
}

} // namespace parallax::testing
