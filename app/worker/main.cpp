// parallax-worker: one training rank, started by mpirun or srun (never by hand in normal use).
//
//   parallax-worker --spec RUN.toml --run-dir DIR [--resume CHECKPOINT] [--stop-after N]
//
// Prints telemetry (core/telemetry) on stdout; exits 0 when the run succeeded or was stopped (the
// run_end event says which), 2 when the spec is invalid, 3 when its supervisor stopped answering
// (trainer/train/SupervisorWatch), 1 on any other failure: after MPI_Finalize when every rank
// failed alike (AgreedFailure: rank 0's run_end says why), else after MPI_Abort so that no rank is
// left waiting in a collective.

#include "core/spec/SpecIO.h"
#include "core/spec/SpecValidator.h"
#include "core/util/BuildId.h"
#include "core/util/HostName.h"
#include "trainer/comm/ProcessGroups.h"
#include "trainer/compat/HostHeap.h"
#include "trainer/comm/RecordedCommunicator.h"
#include "trainer/train/CommHeartbeat.h"
#include "trainer/train/StopRequest.h"
#include "trainer/train/SupervisorWatch.h"
#include "trainer/train/TelemetryEmitter.h"
#include "trainer/train/Trainer.h"
#if PARALLAX_WITH_CUDA
#include "trainer/train/CudaSupport.h"
#endif

#include <CLI/CLI.hpp>
#include <mpi.h>

#include <cstdlib>
#include <optional>
#include <iostream>

using namespace parallax;

namespace {

void emitEnd(TelemetryEmitter& out, const std::string& status, const std::string& reason, int64_t step) {
    RunEndEvent e;
    e.status = status;
    e.reason = reason;
    e.step = step;
    e.t = TelemetryEmitter::now();
    out.emit(e);
}

int worldRankFromEnvironment() {
    for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"})
        if (const char* v = std::getenv(var)) return std::atoi(v);
    return 0;
}

// --profile-steps FIRST:LAST into `options`; false, with the reason on stderr, when it is not that.
bool parseProfileSteps(const std::string& profileSteps, WorkerOptions& options) {
    if (profileSteps.empty())
        return true;
    const auto colon = profileSteps.find(':');
    try {
        if (colon == std::string::npos) throw std::invalid_argument(profileSteps);
        options.profileFirst = std::stoll(profileSteps.substr(0, colon));
        options.profileLast = std::stoll(profileSteps.substr(colon + 1));
    } catch (const std::exception&) {
        std::cerr << "--profile-steps: expected FIRST:LAST (step numbers, e.g. 20:24), got '" << profileSteps
                  << "'\n";
        return false;
    }
    if (options.profileFirst < 0 || options.profileLast < options.profileFirst) {
        std::cerr << "--profile-steps: FIRST must be at least 0 and LAST at least FIRST, got '" << profileSteps
                  << "'\n";
        return false;
    }
    return true;
}

// The spec, read and validated; nothing when it cannot run, after its errors and the run's end are
// reported. Every rank reads the same spec, so every rank leaves the same way, before any collective.
std::optional<RunSpec> readValidSpec(const std::string& specPath, TelemetryEmitter& out) {
    RunSpec spec;
    try {
        spec = readSpecFile(specPath);
    } catch (const std::exception& e) {
        out.error(e.what());
        emitEnd(out, "failed", e.what(), 0);
        return std::nullopt;
    }
    const auto issues = validateSpec(spec, thisMachine());
    if (hasErrors(issues)) {
        if (out.rank() == 0) {
            for (const SpecIssue& i : issues)
                if (!i.warning) out.error(i.field + ": " + i.message);
            emitEnd(out, "failed", "invalid spec: " + issues.front().field + ": " + issues.front().message, 0);
        }
        return std::nullopt;
    }
    return spec;
}

// The data-, tensor- and pipeline-parallel groups over NCCL on this rank's GPU, or over MPI.
ProcessGroups createGroups(const RunSpec& spec, WorkerOptions& options) {
    const int dp = static_cast<int>(spec.parallel.dp), tp = static_cast<int>(spec.parallel.tp),
              pp = static_cast<int>(spec.parallel.pp);
    if (spec.launch.device == Device::Cuda) {
#if PARALLAX_WITH_CUDA
        // One process per GPU: the rank's place on its host picks the device.
        const torch::Device device = selectCudaDevice(localRank());
        options.cudaDevice = device.index();
        return ProcessGroups::createNccl(dp, tp, pp, device.index());
#else
        (void)options;
        throw std::runtime_error("launch.device = \"cuda\" but this parallax-worker was built without CUDA and "
                                 "NCCL; build it against a CUDA LibTorch (packaging/device/run.sh) or set "
                                 "launch.device = \"cpu\"");
#endif
    }
    return ProcessGroups::createMpi(dp, tp, pp);
}

// Trains this rank to the run's end; its exit status. A failure every rank agrees on is reported
// once; any other aborts every rank, so that none is left waiting in a collective.
int train(const RunSpec& spec, WorkerOptions& options, TelemetryEmitter& out) {
    try {
        ProcessGroups groups = createGroups(spec, options);
        // Every operation of every group is recorded; a thread reports them while this one trains
        // (or is blocked in one of them).
        std::optional<CommHeartbeat> heartbeat;
        if (spec.telemetry.flight_recorder) {
            options.recorder = std::make_shared<FlightRecorder>();
            recordCommunication(groups, options.recorder);
            heartbeat.emplace(options.recorder, out, options.runDir, hostName());
        }
        TrainResult result;
        {
            Trainer trainer(spec, options, groups, out);
            result = trainer.run();
        }
        heartbeat.reset();
        if (groups.worldRank() == 0)
            emitEnd(out, result.status, result.status == "stopped" ? "stop requested" : "", result.steps_done);
        groups = ProcessGroups{};
    } catch (const AgreedFailure& e) {
        // Every rank is here with the same message: one report, and every rank leaves MPI in order.
        if (out.rank() == 0) {
            out.error(e.what());
            emitEnd(out, "failed", e.what(), e.step());
        }
        std::cout.flush();
        return 1;
    } catch (const std::exception& e) {
        out.error(e.what());
        emitEnd(out, "failed", "rank " + std::to_string(out.rank()) + " on " + hostName() + ": " + e.what(), 0);
        std::cout.flush();
        MPI_Abort(MPI_COMM_WORLD, 1);
        return 1;
    }
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    keepFreedMemoryInTheHeap();
    CLI::App app{"Parallax training worker: one rank of a run (started by mpirun or srun)"};
    std::string specPath;
    WorkerOptions options;
    int threads = 0;
    // Compared over ssh with the local worker's before a run on hosts starts (core/launch/Preflight).
    app.set_version_flag("--version", versionLine("parallax-worker"));
    app.add_option("--spec", specPath, "Run spec (TOML)")->required();
    app.add_option("--run-dir", options.runDir, "Folder of the run (checkpoints/ goes there)")->required();
    app.add_option("--resume", options.resumeFrom, "Checkpoint folder, or a checkpoints folder (latest valid)");
    app.add_option("--stop-after", options.stopAfter, "Stop (with a checkpoint) once this many steps are done");
    app.add_option("--threads", threads, "Intra-op threads per rank (default: OMP_NUM_THREADS or 1)");
    std::string profileSteps;
    app.add_option("--profile-steps", profileSteps,
                   "Profile steps FIRST:LAST (Kineto: operators, CUDA kernels) into a Chrome trace per rank");
    app.add_option("--profile-out", options.profileOut, "Trace file; with several ranks FILE-rank<R>.json (default: RUN_DIR/profile-rank<R>.json)");
    CLI11_PARSE(app, argc, argv);
    if (!parseProfileSteps(profileSteps, options))
        return 2;

    TelemetryEmitter out(worldRankFromEnvironment());
    const std::optional<RunSpec> spec = readValidSpec(specPath, out);
    if (!spec)
        return 2;

    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    StopRequest::installHandlers();
    // Every rank ends by itself once the supervisor of its run is gone, even when the launcher
    // passes no signal on.
    const SupervisorWatch supervisorWatch(options.runDir, out.rank(), SupervisorWatch::timeoutFromEnvironment());
    if (threads <= 0) {
        const char* omp = std::getenv("OMP_NUM_THREADS");
        threads = omp ? std::max(1, std::atoi(omp)) : 1;
    }
    torch::set_num_threads(threads);

    const int status = train(*spec, options, out);
    MPI_Finalize();
    return status;
}
