#include "core/launch/RunFolders.h"

#include <nlohmann/json.hpp>

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace parallax {

namespace fs = std::filesystem;

namespace {

constexpr const char* kLayoutKey = "run_folder_layout";
constexpr const char* kLayout = "store.runs";
constexpr int kMaxAlternatives = 1000;

std::optional<std::string> readText(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return std::nullopt;
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

// The folder of `run` under the layout before stores had their own: <store folder>/runs/<id>.
fs::path earlierFolder(const std::string& storePath, int64_t run) {
    return fs::absolute(fs::path(storePath)).parent_path() / "runs" / std::to_string(run);
}

} // namespace

std::string RunFolders::rootFor(const std::string& storePath) {
    return fs::absolute(fs::path(storePath + ".runs")).lexically_normal().string();
}

RunFolders::RunFolders(RunStore& store, std::string root)
    : m_store(store), m_root(root.empty() ? rootFor(store.path()) : fs::absolute(root).lexically_normal().string()) {}

void RunFolders::writeOwner(const std::string& dir, int64_t runId) const {
    const nlohmann::json owner{{"store", m_store.storeId()}, {"store_path", fs::absolute(m_store.path()).string()},
                               {"run", runId}};
    const fs::path path = fs::path(dir) / kOwnerFile;
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << owner.dump() << "\n";
    out.flush();
    if (!out)
        throw std::runtime_error("cannot write " + path.string() + ": " + std::strerror(errno));
}

void RunFolders::adopt(const std::string& dir, int64_t runId) {
    writeOwner(dir, runId);
    m_store.setRunDir(runId, fs::absolute(dir).string());
}

RunFolders::Created RunFolders::create(int64_t runId) {
    std::error_code ec;
    fs::create_directories(m_root, ec);
    if (ec)
        throw std::runtime_error("cannot create the run folders' folder " + m_root + ": " + ec.message() +
                                 "; pass another --store path");
    ::chmod(m_root.c_str(), 0700);
    Created made;
    const std::string base = (fs::path(m_root) / std::to_string(runId)).string();
    for (int n = 1; n <= kMaxAlternatives; ++n) {
        const std::string dir = n == 1 ? base : base + "-" + std::to_string(n);
        // mkdir, not create_directories: an existing folder must fail here, never be reused.
        if (::mkdir(dir.c_str(), 0700) == 0) {
            if (n > 1)
                made.notice = "run folder " + base + " exists already and belongs to another store or run; " +
                              "this run's folder is " + dir;
            writeOwner(dir, runId);
            m_store.setRunDir(runId, dir);
            made.dir = dir;
            return made;
        }
        if (errno != EEXIST)
            throw std::runtime_error("cannot create the run folder " + dir + ": " + std::strerror(errno));
    }
    throw std::runtime_error("cannot create a folder for run " + std::to_string(runId) + ": " + base + " and " +
                             std::to_string(kMaxAlternatives - 1) + " alternatives exist; clean up " + m_root);
}

std::optional<std::string> RunFolders::ownershipProblem(const RunRecord& run) const {
    if (run.run_dir.empty())
        return "run " + std::to_string(run.id) + " has no run folder";
    const fs::path dir(run.run_dir);
    std::error_code ec;
    if (!fs::is_directory(dir, ec))
        return "the folder of run " + std::to_string(run.id) + ", " + run.run_dir + ", does not exist";
    if (const std::optional<std::string> text = readText(dir / kOwnerFile)) {
        const nlohmann::json owner = nlohmann::json::parse(*text, nullptr, false);
        const bool ours = owner.is_object() && owner.value("store", std::string()) == m_store.storeId() &&
                          owner.value("run", int64_t(-1)) == run.id;
        if (ours) return std::nullopt;
        return run.run_dir + " belongs to " +
               (owner.is_object() ? "run " + std::to_string(owner.value("run", int64_t(-1))) + " of the store " +
                                        owner.value("store_path", std::string("(unknown)"))
                                  : std::string("something else (its ") + kOwnerFile + " cannot be read)") +
               ", not to run " + std::to_string(run.id) + " of " + m_store.path();
    }
    const std::optional<std::string> spec = readText(dir / "spec.toml");
    if (!spec)
        return run.run_dir + " has neither an owner file nor a spec.toml: nothing shows it belongs to run " +
               std::to_string(run.id) + " of " + m_store.path();
    if (*spec != run.spec_toml)
        return run.run_dir + " holds another run's files: its spec.toml differs from run " + std::to_string(run.id) +
               "'s spec (another store in the same folder wrote there)";
    return std::nullopt;
}

std::vector<std::string> RunFolders::migrateEarlierLayout() {
    std::vector<std::string> done;
    if (m_store.storeInfo(kLayoutKey).value_or("") == kLayout)
        return done;
    bool complete = true;
    for (const RunRecord& run : m_store.listRuns()) {
        const fs::path old = earlierFolder(m_store.path(), run.id);
        if (run.run_dir != old.string())
            continue;
        if (!isTerminal(run.state)) {
            complete = false; // its supervisor still writes there; moved at a later start
            continue;
        }
        if (const std::optional<std::string> problem = ownershipProblem(run)) {
            done.push_back("run " + std::to_string(run.id) + ": left in place: " + *problem);
            continue;
        }
        std::error_code ec;
        fs::create_directories(m_root, ec);
        ::chmod(m_root.c_str(), 0700);
        fs::path target = fs::path(m_root) / std::to_string(run.id);
        for (int n = 2; fs::exists(target, ec) && n <= kMaxAlternatives; ++n)
            target = fs::path(m_root) / (std::to_string(run.id) + "-" + std::to_string(n));
        fs::rename(old, target, ec);
        if (ec) {
            done.push_back("run " + std::to_string(run.id) + ": cannot move " + old.string() + " to " +
                           target.string() + ": " + ec.message());
            complete = false;
            continue;
        }
        ::chmod(target.c_str(), 0700);
        writeOwner(target.string(), run.id);
        m_store.relocateRunDir(run.id, old.string(), target.string());
        done.push_back("run " + std::to_string(run.id) + ": moved " + old.string() + " to " + target.string());
    }
    if (complete)
        m_store.setStoreInfo(kLayoutKey, kLayout);
    return done;
}

} // namespace parallax
