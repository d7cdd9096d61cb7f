#include "core/launch/RunFolderImport.h"

#include "core/launch/RawOutput.h"

#include "core/launch/CheckpointScan.h"
#include "core/launch/OutputImport.h"
#include "core/launch/RunFolders.h"
#include "core/spec/LayoutLabel.h"
#include "core/spec/SpecIO.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace parallax {

namespace fs = std::filesystem;

namespace {

bool isRunFolder(const fs::path& dir) {
    std::error_code ec;
    return fs::is_regular_file(dir / "spec.toml", ec) && !rawOutputFile(dir.string()).empty();
}

double modified(const fs::path& file) {
    struct stat st {};
    return ::stat(file.c_str(), &st) == 0 ? static_cast<double>(st.st_mtime) : 0;
}

// Run folders are named by their run id: 2 comes before 10.
bool byRunNumber(const fs::path& a, const fs::path& b) {
    const std::string x = a.filename().string(), y = b.filename().string();
    const long long nx = std::atoll(x.c_str()), ny = std::atoll(y.c_str());
    return nx != ny ? nx < ny : x < y;
}

std::string importOne(RunStore& store, const fs::path& dir) {
    for (const RunRecord& r : store.listRuns())
        if (!r.run_dir.empty() && fs::equivalent(r.run_dir, dir))
            return dir.string() + ": already in " + store.path() + " as run " + std::to_string(r.id) + "; left alone";
    std::ifstream in(dir / "spec.toml", std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    const RunSpec spec = parseSpec(text.str(), (dir / "spec.toml").string());
    NewRun nr;
    nr.name = spec.name.empty() ? dir.filename().string() : spec.name;
    nr.spec_toml = text.str();
    nr.model_kind = spec.model.kind.name();
    nr.layout = layoutLabel(spec.parallel);
    nr.steps_total = spec.train.steps;
    nr.world_size = static_cast<int>(spec.processCount());
    const int64_t id = store.createRun(nr);
    RunFolders(store).adopt(dir.string(), id);
    store.setOutputOffset(id, 0);
    store.setStartedAt(id, modified(dir / "spec.toml"));
    const std::optional<RunRecord> run = store.run(id);
    const OutputImport done = importOutput(store, *run, 0);
    const size_t checkpoints = recordCheckpointsOnDisk(store, *run);
    const std::vector<RawOutputSegmentFile> segments = rawOutputSegments(dir.string());
    const double ended = modified(segments.empty() ? rawOutputFile(dir.string()) : segments.back().path);
    RunState state = RunState::Lost;
    std::string reason = "imported from " + dir.string() + "; its output does not show how it ended";
    if (const std::optional<RunState> ended = endState(done)) {
        state = *ended;
        reason = (done.run_end->reason.empty() ? std::string() : done.run_end->reason + "; ") + "imported from " +
                 dir.string();
    }
    store.finishRun(id, state, std::nullopt, reason, ended);
    return dir.string() + ": run " + std::to_string(id) + " (" + nr.name + "), " + std::to_string(done.rows) +
           " row(s), " + std::to_string(checkpoints) + " checkpoint(s), " + runStateName(state);
}

} // namespace

std::vector<std::string> importRunFolders(RunStore& store, const std::string& path) {
    const fs::path root = fs::absolute(path);
    std::vector<fs::path> folders;
    std::error_code ec;
    if (isRunFolder(root)) {
        folders.push_back(root);
    } else {
        for (const fs::directory_entry& e : fs::directory_iterator(root, ec))
            if (e.is_directory(ec) && isRunFolder(e.path())) folders.push_back(e.path());
        std::sort(folders.begin(), folders.end(), byRunNumber);
    }
    if (folders.empty())
        throw std::runtime_error(path + " is not a run folder (one with spec.toml and output.log.gz or output.log) and holds none; "
                                 "give a run's folder or a store's <store>.runs folder");
    std::vector<std::string> said;
    for (const fs::path& dir : folders) {
        try {
            said.push_back(importOne(store, dir));
        } catch (const StoreError&) {
            throw;
        } catch (const std::exception& e) {
            said.push_back(dir.string() + ": not imported: " + e.what());
        }
    }
    return said;
}

} // namespace parallax
