#include "BrowseTestSupport.h"

#include "ui/models/CompareRunsModel.h"
#include "ui/models/StoreWatcher.h"

#include <QSignalSpy>

#include <gtest/gtest.h>

#include <vector>

using namespace parallax;
using namespace parallax::test;

namespace {

std::vector<int64_t> idsOf(const std::vector<CompareRun>& runs) {
    std::vector<int64_t> out;
    for (const CompareRun& r : runs) out.push_back(r.record.id);
    return out;
}

struct Fixture {
    CraftedStore store;
    int64_t a = 0, b = 0;
    std::unique_ptr<StoreWatcher> watcher;
    std::unique_ptr<CompareRunsModel> model;
    // The runs of each loaded() signal, in order.
    std::vector<std::vector<int64_t>> answers;

    Fixture() {
        a = store.addRun(tinySpec("base"), RunState::Succeeded, 20, 4.0);
        RunSpec other = tinySpec("lr");
        other.train.lr = 1e-3;
        b = store.addRun(other, RunState::Succeeded, 10, 3.0);
        watcher = std::make_unique<StoreWatcher>(store.qpath());
        model = std::make_unique<CompareRunsModel>(watcher.get());
        QObject::connect(model.get(), &CompareRunsModel::loaded, model.get(),
                         [this] { answers.push_back(idsOf(model->runs())); });
    }
    ~Fixture() {
        model.reset();
        watcher.reset();
    }
};

} // namespace

TEST(CompareRunsModel, LoadsTheRunsInTheOrderAskedAndLeavesOutRunsNotInTheStore) {
    Fixture f;
    f.model->load({f.b, 4711, f.a});
    EXPECT_TRUE(f.model->isLoading());
    ASSERT_TRUE(waitFor([&] { return !f.answers.empty(); }));
    EXPECT_FALSE(f.model->isLoading());
    ASSERT_EQ(f.answers, (std::vector<std::vector<int64_t>>{{f.b, f.a}}));
    const std::vector<CompareRun>& runs = f.model->runs();
    EXPECT_EQ(runs[0].metrics.size(), 10u);
    EXPECT_EQ(runs[1].metrics.size(), 20u);
    ASSERT_TRUE(runs[0].spec.has_value());
    EXPECT_DOUBLE_EQ(runs[0].spec->train.lr, 1e-3);
    EXPECT_EQ(runs[0].seriesOf(CompareMetric::Loss)->size(), 10u);
    ASSERT_TRUE(runs[1].report.has_value());
}

TEST(CompareRunsModel, OnlyTheNewestLoadIsAnnounced) {
    Fixture f;
    f.model->load({f.a});
    f.model->load({f.a, f.b});
    f.model->load({f.b});
    ASSERT_TRUE(waitFor([&] { return !f.model->isLoading(); }));
    EXPECT_EQ(f.answers, (std::vector<std::vector<int64_t>>{{f.b}}));

    // Unchecking everything empties the comparison at once; the load before it is not shown after.
    f.model->load({f.a});
    f.model->load({});
    ASSERT_EQ(f.answers.size(), 2u);
    EXPECT_TRUE(f.answers.back().empty());
    ASSERT_TRUE(waitFor([&] { return !f.model->isLoading(); }));
    QTest::qWait(50);
    EXPECT_EQ(f.answers.size(), 2u);
    EXPECT_TRUE(f.model->runs().empty());
}

TEST(CompareRunsModel, WithoutAStoreNothingIsLoaded) {
    CompareRunsModel model(nullptr);
    QSignalSpy loaded(&model, &CompareRunsModel::loaded);
    EXPECT_FALSE(model.hasStore());
    model.load({1, 2});
    EXPECT_EQ(loaded.count(), 1);
    EXPECT_TRUE(model.runs().empty());
    EXPECT_FALSE(model.isLoading());
}
