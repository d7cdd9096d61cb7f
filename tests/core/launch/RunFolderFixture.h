#pragma once

// A store with one run and its run folder, for the tests that read a run's raw output into the
// store (OutputImportTest, OutputSegmentsTest).

#include "core/store/RunStore.h"
#include "tests/support/Process.h"

#include <cstdint>
#include <filesystem>
#include <string>

namespace parallax::testing {

struct RunFolderFixture {
    TempDir dir;
    RunStore store{dir.path() + "/parallax.db"};
    int64_t id = 0;
    std::string runDir = dir.path() + "/run";
    explicit RunFolderFixture(const std::string& name) {
        NewRun nr;
        nr.name = name;
        nr.spec_toml = "name = \"" + name + "\"\n";
        id = store.createRun(nr);
        std::filesystem::create_directories(runDir);
        store.setRunDir(id, runDir);
    }
};

} // namespace parallax::testing
