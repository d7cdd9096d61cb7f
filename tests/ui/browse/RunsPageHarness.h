#pragma once

// The Runs page over a CraftedStore as the console wires it: a store watcher feeding the run
// list, a writer thread for its edits. A test's fixture derives from it, fills the store, then
// opens the page.

#include "BrowseTestSupport.h"

#include "ui/models/RunListModel.h"
#include "ui/models/RunStoreThread.h"
#include "ui/models/StoreWatcher.h"
#include "ui/pages/RunsPage.h"

#include <gtest/gtest.h>

#include <memory>

namespace parallax::test {

struct RunsPageHarness {
    CraftedStore store; // first made, last gone
    std::unique_ptr<StoreWatcher> watcher;
    std::unique_ptr<RunStoreThread> writer;
    RunListModel runs;
    std::unique_ptr<RunsPage> page;

    // Shows the page at `width` x `height` once the list holds `expectedRuns` runs.
    void open(int expectedRuns, int width, int height) {
        watcher = std::make_unique<StoreWatcher>(store.qpath());
        writer = std::make_unique<RunStoreThread>(store.qpath());
        runs.setWriter(writer.get());
        QObject::connect(watcher.get(), &StoreWatcher::runsChanged, &runs,
                         [this](const std::vector<RunRecord>& r) { runs.setRuns(r); });
        page = std::make_unique<RunsPage>(&runs, watcher.get(), writer.get());
        page->resize(width, height);
        EXPECT_TRUE(waitFor([&] { return runs.rowCount() == expectedRuns; }));
    }
    ~RunsPageHarness() {
        page.reset();
        writer.reset();
        watcher.reset();
    }
};

} // namespace parallax::test
