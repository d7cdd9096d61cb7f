#include "core/launch/CheckpointScan.h"

#include <nlohmann/json.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace parallax {

namespace fs = std::filesystem;

namespace {

// step_N -> N; -1 for any other name (step_12.partial, step_12.aside-...).
int64_t stepOfFolder(const std::string& name) {
    if (name.rfind("step_", 0) != 0 || name.size() == 5) return -1;
    const std::string digits = name.substr(5);
    if (digits.size() > 18 || digits.find_first_not_of("0123456789") != std::string::npos) return -1;
    return std::stoll(digits);
}

} // namespace

std::vector<CheckpointEvent> checkpointsOnDisk(const std::string& runDir) {
    std::vector<CheckpointEvent> found;
    if (runDir.empty()) return found;
    std::error_code ec;
    for (const fs::directory_entry& e : fs::directory_iterator(fs::path(runDir) / "checkpoints", ec)) {
        const int64_t step = stepOfFolder(e.path().filename().string());
        const fs::path manifestPath = e.path() / "manifest.json";
        struct stat st {};
        if (step < 0 || ::stat(manifestPath.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
        std::ifstream in(manifestPath, std::ios::binary);
        std::ostringstream text;
        text << in.rdbuf();
        const nlohmann::json manifest = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
        if (!manifest.is_object()) continue;
        CheckpointEvent c;
        c.step = step;
        c.path = e.path().string();
        c.t = static_cast<double>(st.st_mtime);
        if (const auto layout = manifest.find("layout"); layout != manifest.end() && layout->is_string())
            c.layout = layout->get<std::string>();
        if (const auto files = manifest.find("files"); files != manifest.end() && files->is_array())
            for (const nlohmann::json& f : *files)
                if (f.is_object() && f.contains("bytes") && f["bytes"].is_number_integer())
                    c.bytes += f["bytes"].get<int64_t>();
        found.push_back(c);
    }
    std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.step < b.step; });
    return found;
}

size_t recordCheckpointsOnDisk(RunStore& store, const RunRecord& run) {
    std::set<int64_t> known;
    for (const CheckpointEvent& c : store.checkpoints(run.id)) known.insert(c.step);
    size_t added = 0;
    for (const CheckpointEvent& c : checkpointsOnDisk(run.run_dir)) {
        if (known.count(c.step)) continue;
        store.insertCheckpoint(run.id, c);
        ++added;
    }
    return added;
}

} // namespace parallax
