#pragma once

#include "core/store/RunStore.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace parallax {

// Where a store keeps its runs' folders, and which folder belongs to which run.
//
// Run ids count from 1 in every store, so folders named by id alone collide between two stores in
// one folder, or with a store deleted and made again. Each store therefore keeps its runs under
// <store file>.runs/ (parallax.db -> parallax.db.runs/<id>/), every run folder holds an owner file
// naming the store's identity (RunStore::storeId) and the run, and a folder that exists already is
// never reused. Folders are made 0700: a run's folder may hold secrets (its spec, checkpoints).
class RunFolders {
public:
    static constexpr const char* kOwnerFile = ".parallax-run"; // {"store": ID, "run": N}

    explicit RunFolders(RunStore& store, std::string root = {});

    // <store file>.runs, absolute; or the root given.
    const std::string& root() const { return m_root; }

    struct Created {
        std::string dir;
        std::string notice; // non-empty when the folder of that id was taken and another was made
    };
    // Makes the run's folder, <root>/<id>, or <root>/<id>-2, -3... when one of those exists (it
    // belongs to another store, or to nothing), writes its owner file and records it as the run's
    // folder. Throws std::runtime_error naming the folder when it cannot be made.
    Created create(int64_t runId);

    // Takes `dir`, the folder of a run of another store (brought in by parallax-cli import), as
    // the folder of `runId`: its owner file names this store from now on, and the run records it.
    void adopt(const std::string& dir, int64_t runId);

    // Why `run`'s folder cannot be trusted to be its own, or std::nullopt when it can: its owner
    // file names another store or run; without one (folders of earlier versions), its spec.toml
    // differs from the run's spec.
    std::optional<std::string> ownershipProblem(const RunRecord& run) const;

    // Once per store: moves the folders of the earlier layout (<store folder>/runs/<id>) that
    // belong to this store's ended runs, as ownershipProblem() judges them, to the current layout
    // and records their new place. A folder that another store overwrote is left where it is.
    // Returns what was done, one line per run moved or left.
    std::vector<std::string> migrateEarlierLayout();

    static std::string rootFor(const std::string& storePath);

private:
    void writeOwner(const std::string& dir, int64_t runId) const;
    RunStore& m_store;
    std::string m_root;
};

} // namespace parallax
