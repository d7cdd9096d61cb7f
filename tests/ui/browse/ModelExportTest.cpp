#include "BrowseTestSupport.h"

#include "ui/models/CompareRun.h"
#include "ui/models/ModelExportRunner.h"
#include "ui/models/RunListModel.h"
#include "ui/models/RunOrigin.h"
#include "ui/models/RunStoreThread.h"
#include "ui/models/StoreWatcher.h"
#include "ui/models/SummaryModel.h"
#include "ui/models/TableRoles.h"
#include "ui/pages/ModelExportAction.h"
#include "ui/pages/ModelExportDialog.h"
#include "ui/pages/RunsPage.h"

#include <QFile>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QRadioButton>
#include <QSignalSpy>
#include <QStandardItemModel>
#include <QTableView>

#include <gtest/gtest.h>

using namespace parallax;
using namespace parallax::test;

namespace {

const char* kVlFolder = "/models/Qwen2.5-VL-3B-Instruct/";

RunSpec loraVlSpec() {
    RunSpec s = tinySpec("vl-lora");
    s.model.kind = ModelKind::Qwen2_5_Vl;
    s.model.from = kVlFolder;
    s.finetune.mode = FinetuneMode::Lora;
    s.finetune.lora_r = 16;
    return s;
}

RunSpec fullQwen2Spec() {
    RunSpec s = tinySpec("qwen2-full");
    s.model.kind = ModelKind::Qwen2;
    s.model.from = "/models/Qwen2-0.5B";
    return s;
}

RunSpec presetVlSpec() {
    RunSpec s = tinySpec("vl-preset");
    s.model.kind = ModelKind::Qwen2_5_Vl;
    return s;
}

// The spec as the store keeps it.
RunRecord recordOf(const RunSpec& spec) {
    RunRecord r;
    r.id = 1;
    r.name = spec.name;
    r.spec_toml = toToml(spec);
    r.model_kind = spec.model.kind.name();
    r.run_dir = "/runs/1";
    return r;
}

QStringList recordedArguments(const QTemporaryDir& dir) {
    QFile args(dir.filePath(QStringLiteral("args")));
    if (!args.open(QIODevice::ReadOnly)) return {};
    return QString::fromUtf8(args.readAll()).split(QChar('\n'), Qt::SkipEmptyParts);
}

struct Fixture {
    CraftedStore store;
    QTemporaryDir cliDir;
    int64_t lora = 0, full = 0, preset = 0, gpt = 0, noCheckpoint = 0;
    std::unique_ptr<StoreWatcher> watcher;
    std::unique_ptr<RunStoreThread> writer;
    RunListModel runs;
    std::unique_ptr<RunsPage> page;

    Fixture() {
        lora = addWithCheckpoint(loraVlSpec());
        full = addWithCheckpoint(fullQwen2Spec());
        preset = addWithCheckpoint(presetVlSpec());
        gpt = addWithCheckpoint(tinySpec("gpt-text"));
        RunSpec later = loraVlSpec();
        later.name = "vl-lora-cut-short";
        noCheckpoint = store.addRun(later, RunState::Failed, 3);
        store.store.setRunDir(noCheckpoint, store.dir.filePath(QStringLiteral("runs/short")).toStdString());
        watcher = std::make_unique<StoreWatcher>(store.qpath());
        writer = std::make_unique<RunStoreThread>(store.qpath());
        QObject::connect(watcher.get(), &StoreWatcher::runsChanged, &runs,
                         [this](const std::vector<RunRecord>& r) { runs.setRuns(r); });
        page = std::make_unique<RunsPage>(&runs, watcher.get(), writer.get());
        page->setStorePath(store.qpath());
        EXPECT_TRUE(waitFor([&] { return runs.rowCount() == 5; }));
    }
    ~Fixture() {
        page.reset();
        writer.reset();
        watcher.reset();
    }
    int64_t addWithCheckpoint(const RunSpec& spec) {
        const int64_t id = store.addRun(spec, RunState::Succeeded, 10);
        const std::string dir = store.dir.filePath(QStringLiteral("runs/%1").arg(id)).toStdString();
        store.store.setRunDir(id, dir);
        CheckpointEvent c;
        c.step = 9;
        c.path = dir + "/checkpoints/step_00000009";
        store.store.insertCheckpoint(id, c);
        return id;
    }
    QString cell(int64_t id, int column, int role = Qt::DisplayRole) const {
        return runs.index(runs.rowOfRun(id), column).data(role).toString();
    }
    QPushButton* exportButton() const { return page->modelExport()->button(); }
};

} // namespace

TEST(RunOrigin, NamesTheBaseModelAndTheFinetuneMode) {
    const RunOrigin lora = RunOrigin::of(recordOf(loraVlSpec()));
    EXPECT_EQ(lora.baseModel, QStringLiteral("Qwen2.5-VL-3B-Instruct"));
    EXPECT_EQ(lora.baseModelTip, QString::fromLatin1(kVlFolder));
    EXPECT_EQ(lora.mode, QStringLiteral("LoRA r 16"));

    const RunOrigin full = RunOrigin::of(recordOf(fullQwen2Spec()));
    EXPECT_EQ(full.baseModel, QStringLiteral("Qwen2-0.5B"));
    EXPECT_EQ(full.mode, QStringLiteral("full"));

    const RunOrigin preset = RunOrigin::of(recordOf(presetVlSpec()));
    EXPECT_EQ(preset.baseModel, QStringLiteral("qwen2_5_vl tiny"));
    EXPECT_EQ(preset.baseModelTip, QString());
    EXPECT_EQ(preset.mode, QStringLiteral("full"));

    const RunOrigin gpt = RunOrigin::of(recordOf(tinySpec("gpt-text")));
    EXPECT_EQ(gpt.baseModel, QStringLiteral("gpt tiny"));
    EXPECT_EQ(gpt.mode, QString(QChar(0x2014)));

    RunRecord broken = recordOf(tinySpec("x"));
    broken.spec_toml = "[model\nkind = 3";
    const RunOrigin unreadable = RunOrigin::of(broken);
    EXPECT_EQ(unreadable.baseModel, QString());
    EXPECT_FALSE(unreadable.specError.isEmpty());
}

TEST(ModelExportCheck, OffersPublishedRunsFromAFolderWithACheckpoint) {
    const RunRecord lora = recordOf(loraVlSpec());
    const ModelExportCheck ok = ModelExportCheck::of(lora, RunOrigin::of(lora), 2);
    EXPECT_TRUE(ok.allowed);
    EXPECT_TRUE(ok.adapterOnly);
    EXPECT_FALSE(ModelExportCheck::of(lora, RunOrigin::of(lora), std::nullopt).allowed);

    const RunRecord full = recordOf(fullQwen2Spec());
    const ModelExportCheck fullCheck = ModelExportCheck::of(full, RunOrigin::of(full), 1);
    EXPECT_TRUE(fullCheck.allowed);
    EXPECT_FALSE(fullCheck.adapterOnly);

    const RunRecord preset = recordOf(presetVlSpec());
    const ModelExportCheck presetCheck = ModelExportCheck::of(preset, RunOrigin::of(preset), 1);
    EXPECT_FALSE(presetCheck.allowed);
    EXPECT_TRUE(presetCheck.why.contains(QStringLiteral("model.from"))) << presetCheck.why.toStdString();
}

TEST(RunsPage, ShowsEachRunsBaseModelAndFinetuneMode) {
    Fixture f;
    EXPECT_EQ(f.runs.headerData(RunListModel::BaseModelColumn, Qt::Horizontal).toString(), QStringLiteral("Base model"));
    EXPECT_EQ(f.runs.headerData(RunListModel::FinetuneColumn, Qt::Horizontal).toString(), QStringLiteral("Finetune"));
    EXPECT_EQ(f.cell(f.lora, RunListModel::BaseModelColumn), QStringLiteral("Qwen2.5-VL-3B-Instruct"));
    EXPECT_EQ(f.cell(f.lora, RunListModel::BaseModelColumn, Qt::ToolTipRole), QString::fromLatin1(kVlFolder));
    EXPECT_EQ(f.cell(f.lora, RunListModel::FinetuneColumn), QStringLiteral("LoRA r 16"));
    EXPECT_EQ(f.cell(f.full, RunListModel::BaseModelColumn), QStringLiteral("Qwen2-0.5B"));
    EXPECT_EQ(f.cell(f.full, RunListModel::FinetuneColumn), QStringLiteral("full"));
    EXPECT_EQ(f.cell(f.preset, RunListModel::BaseModelColumn), QStringLiteral("qwen2_5_vl tiny"));
    EXPECT_EQ(f.cell(f.preset, RunListModel::FinetuneColumn), QStringLiteral("full"));
    EXPECT_EQ(f.cell(f.gpt, RunListModel::BaseModelColumn), QStringLiteral("gpt tiny"));
    EXPECT_EQ(f.cell(f.gpt, RunListModel::FinetuneColumn), QString(QChar(0x2014)));

    // Export CSV writes the values: model.from in full (or the preset), the mode and rank apart.
    const QVariantList base = f.runs.index(f.runs.rowOfRun(f.lora), RunListModel::BaseModelColumn).data(RawValueRole).toList();
    EXPECT_EQ(base, (QVariantList{QString::fromLatin1(kVlFolder), QVariant()}));
    const QVariantList mode = f.runs.index(f.runs.rowOfRun(f.lora), RunListModel::FinetuneColumn).data(RawValueRole).toList();
    EXPECT_EQ(mode, (QVariantList{QStringLiteral("lora"), qlonglong(16)}));
    EXPECT_EQ(f.runs.headerData(RunListModel::FinetuneColumn, Qt::Horizontal, RawValueRole).toStringList(),
              (QStringList{"finetune_mode", "lora_r"}));

    // They come last in the model, so that a saved header state keeps its columns, and show after Model.
    const QHeaderView* header = f.page->view()->horizontalHeader();
    EXPECT_EQ(header->visualIndex(RunListModel::BaseModelColumn), header->visualIndex(RunListModel::ModelColumn) + 1);
    EXPECT_EQ(header->visualIndex(RunListModel::FinetuneColumn), header->visualIndex(RunListModel::ModelColumn) + 2);
}

// A header state saved before the two columns came restores each column it knew (its width, hidden
// or not); the new ones are shown.
TEST(RunsPage, AHeaderStateSavedBeforeTheOriginColumnsStillRestores) {
    Fixture f;
    QStandardItemModel older(0, RunListModel::NotesColumn + 1);
    QTableView oldView;
    oldView.setModel(&older);
    oldView.setColumnWidth(RunListModel::NotesColumn, 333);
    oldView.setColumnHidden(RunListModel::LayoutColumn, true);
    const QByteArray saved = oldView.horizontalHeader()->saveState();

    QHeaderView* header = f.page->view()->horizontalHeader();
    ASSERT_TRUE(header->restoreState(saved));
    EXPECT_EQ(header->count(), int(RunListModel::ColumnCount));
    EXPECT_TRUE(header->isSectionHidden(RunListModel::LayoutColumn));
    EXPECT_EQ(header->sectionSize(RunListModel::NotesColumn), 333);
    EXPECT_FALSE(header->isSectionHidden(RunListModel::BaseModelColumn));
    EXPECT_FALSE(header->isSectionHidden(RunListModel::FinetuneColumn));
    EXPECT_GT(header->sectionSize(RunListModel::BaseModelColumn), 0);
}

TEST(RunsPage, ExportIsOffWithWhyForARunWithoutACheckpointAndAGptRun) {
    Fixture f;
    QPushButton* button = f.exportButton();
    EXPECT_EQ(button->text(), QStringLiteral("Export…"));
    f.page->selectRun(f.noCheckpoint);
    ASSERT_TRUE(waitFor([&] { return button->toolTip().contains(QStringLiteral("no checkpoint")); }))
        << button->toolTip().toStdString();
    EXPECT_FALSE(button->isEnabled());

    f.page->selectRun(f.gpt);
    EXPECT_FALSE(button->isEnabled());
    EXPECT_EQ(button->toolTip(),
              QStringLiteral("model.kind = \"gpt\" has no published form to export; export writes runs of "
                             "\"qwen2_5_vl\", \"qwen2\" or \"qwen_image\""));

    f.page->selectRun(f.preset);
    EXPECT_FALSE(button->isEnabled());
    EXPECT_TRUE(button->toolTip().contains(QStringLiteral("started from a preset"))) << button->toolTip().toStdString();

    f.page->selectRun(f.lora);
    ASSERT_TRUE(waitFor([&] { return button->isEnabled(); })) << button->toolTip().toStdString();
}

// Export… asks where and what, then runs parallax-cli export with one argument each (never a shell
// string), and shows its lines and its result on the page.
TEST(RunsPage, ExportRunsParallaxCliExportWithTheChosenFolder) {
    Fixture f;
    ModelExportAction* action = f.page->modelExport();
    action->runner()->setCliPath(fakeCli(f.cliDir,
                                         "checkpoint /runs/1/checkpoints/step_00000009 (step 9)\\n"
                                         "/out/vl adapter: the LoRA adapter; load it with PEFT\\n",
                                         0));
    const QString folder = f.store.dir.filePath(QStringLiteral("exported vl"));
    std::optional<ModelExportRequest> asked;
    action->setAskChoice([&](const ModelExportRequest& request) {
        asked = request;
        return std::optional<ModelExportChoice>(ModelExportChoice{folder, ModelExportRunner::Content::AdapterOnly});
    });
    QSignalSpy status(f.page.get(), &RunsPage::statusMessage);
    f.page->selectRun(f.lora);
    ASSERT_TRUE(waitFor([&] { return f.exportButton()->isEnabled(); }));
    QStringList shown; // the page's status line as each progress line came
    QObject::connect(action->runner(), &ProbeCommand::progress, action, [&] { shown << action->statusLabel()->text(); });
    f.exportButton()->click();
    ASSERT_TRUE(asked.has_value());
    EXPECT_EQ(asked->runId, f.lora);
    EXPECT_TRUE(asked->lora);
    // The command goes on while the page does: Export… is off until it ends.
    EXPECT_TRUE(action->runner()->isRunning());
    EXPECT_FALSE(f.exportButton()->isEnabled());
    EXPECT_EQ(f.exportButton()->toolTip(), QStringLiteral("Exporting run #%1 to %2…").arg(f.lora).arg(folder));
    ASSERT_TRUE(waitFor([&] { return !status.isEmpty(); }));
    ASSERT_FALSE(shown.isEmpty());
    EXPECT_EQ(shown.first(),
              QStringLiteral("Exporting run #%1: checkpoint /runs/1/checkpoints/step_00000009 (step 9)").arg(f.lora));
    EXPECT_TRUE(f.exportButton()->isEnabled());
    EXPECT_EQ(status.last().at(0).toString(), QStringLiteral("Exported run #%1: /out/vl adapter: the LoRA adapter; load it with PEFT").arg(f.lora));
    EXPECT_EQ(recordedArguments(f.cliDir),
              (QStringList{"--store", f.store.qpath(), "export", QString::number(f.lora), "-o", folder}));
    EXPECT_EQ(action->statusLabel()->text(), status.last().at(0).toString());

    // The merged model of a full run: --merge.
    const QString merged = f.store.dir.filePath(QStringLiteral("qwen2"));
    action->setAskChoice([&](const ModelExportRequest& request) {
        asked = request;
        return std::optional<ModelExportChoice>(ModelExportChoice{merged, ModelExportRunner::Content::Merged});
    });
    f.page->selectRun(f.full);
    ASSERT_TRUE(waitFor([&] { return f.exportButton()->isEnabled(); }));
    f.exportButton()->click();
    EXPECT_FALSE(asked->lora);
    ASSERT_TRUE(waitFor([&] { return status.count() == 2; }));
    EXPECT_EQ(recordedArguments(f.cliDir),
              (QStringList{"--store", f.store.qpath(), "export", QString::number(f.full), "-o", merged, "--merge"}));
}

TEST(RunsPage, ExportShowsWhatTheCliSaidWhenItFails) {
    Fixture f;
    ModelExportAction* action = f.page->modelExport();
    action->runner()->setCliPath(fakeCli(f.cliDir, "parallax-export: /x: cannot be created: Permission denied\\n", 1));
    QSignalSpy status(f.page.get(), &RunsPage::statusMessage);
    QString error;
    ASSERT_TRUE(action->exportRun(f.lora, {f.store.dir.filePath(QStringLiteral("out")), ModelExportRunner::Content::Merged}, &error))
        << error.toStdString();
    ASSERT_TRUE(waitFor([&] { return !status.isEmpty(); }));
    EXPECT_EQ(status.last().at(0).toString(),
              QStringLiteral("Export of run #%1 failed: parallax-cli export failed (exit code 1): parallax-export: /x: "
                             "cannot be created: Permission denied")
                  .arg(f.lora));

    // A folder that holds files is refused before anything runs.
    QDir().mkpath(f.store.dir.filePath(QStringLiteral("full")));
    QFile held(f.store.dir.filePath(QStringLiteral("full/config.json")));
    ASSERT_TRUE(held.open(QIODevice::WriteOnly));
    held.close();
    EXPECT_FALSE(action->exportRun(f.lora, {f.store.dir.filePath(QStringLiteral("full")), ModelExportRunner::Content::Merged}, &error));
    EXPECT_TRUE(error.contains(QStringLiteral("already holds files"))) << error.toStdString();
}

TEST(ModelExportDialog, RefusesAFolderThatHoldsFilesAndOffersTheAdapterToLoraRunsOnly) {
    QTemporaryDir dir;
    QFile held(dir.filePath(QStringLiteral("config.json")));
    ASSERT_TRUE(held.open(QIODevice::WriteOnly));
    held.close();
    ModelExportDialog full({7, QStringLiteral("qwen2-full"), false, dir.filePath(QStringLiteral("new"))});
    EXPECT_FALSE(full.adapterButton()->isEnabled());
    EXPECT_TRUE(full.mergedButton()->isChecked());
    full.folderEdit()->setText(dir.path());
    full.accept();
    EXPECT_NE(full.result(), QDialog::Accepted);
    EXPECT_TRUE(full.problemLabel()->text().contains(QStringLiteral("already holds files")));

    ModelExportDialog lora({8, QStringLiteral("vl-lora"), true, dir.filePath(QStringLiteral("new"))});
    ASSERT_TRUE(lora.adapterButton()->isEnabled());
    lora.adapterButton()->setChecked(true);
    lora.accept();
    EXPECT_EQ(lora.result(), QDialog::Accepted);
    EXPECT_EQ(lora.choice().folder, dir.filePath(QStringLiteral("new")));
    EXPECT_EQ(lora.choice().content, ModelExportRunner::Content::AdapterOnly);
}

TEST(SummaryModel, ShowsEachRunsBaseModelAndFinetuneMode) {
    RunRecord lora = recordOf(loraVlSpec());
    RunRecord gpt = recordOf(tinySpec("gpt-text"));
    gpt.id = 2;
    SummaryModel model;
    model.setRuns({CompareRun::fromRows(lora, {}), CompareRun::fromRows(gpt, {})}, 0);
    EXPECT_EQ(model.headerData(SummaryModel::BaseModel, Qt::Vertical).toString(), QStringLiteral("Base model"));
    EXPECT_EQ(model.headerData(SummaryModel::Finetune, Qt::Vertical).toString(), QStringLiteral("Finetune"));
    EXPECT_EQ(model.index(SummaryModel::BaseModel, 0).data().toString(), QStringLiteral("Qwen2.5-VL-3B-Instruct"));
    EXPECT_EQ(model.index(SummaryModel::BaseModel, 0).data(Qt::ToolTipRole).toString(), QString::fromLatin1(kVlFolder));
    EXPECT_EQ(model.index(SummaryModel::Finetune, 0).data().toString(), QStringLiteral("LoRA r 16"));
    EXPECT_EQ(model.index(SummaryModel::BaseModel, 1).data().toString(), QStringLiteral("gpt tiny"));
    EXPECT_EQ(model.index(SummaryModel::Finetune, 1).data().toString(), QString(QChar(0x2014)));
}
