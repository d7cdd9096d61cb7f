// The New run form for fine-tuning Qwen2.5-VL from a folder (QwenFinetuneData: the reference's tiny
// checkpoint with Qwen's real tokenizer.json): what the model is and what trains beneath model.from, the
// conversations dataset as a run reads it beneath data.path (its first sample rendered with the
// answers marked), the Issues box while the dataset would be refused, and the memory per device
// trained whole, with frozen parts and with LoRA; Launch runs the 200-step fine-tune.

#include "BrowseTestSupport.h"

#include "core/spec/SpecIO.h"
#include "core/store/RunStore.h"
#include "tests/support/QwenFinetuneData.h"
#include "ui/models/ConversationDatasetModel.h"
#include "ui/models/RunLauncher.h"
#include "ui/models/SpecFormModel.h"
#include "ui/pages/EstimatePanel.h"
#include "ui/pages/FinetuneRows.h"
#include "ui/pages/NewRunPage.h"
#include "ui/pages/SpecIssuesPanel.h"

#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

using namespace parallax;
using namespace parallax::test;

namespace {

// The tiny qwen2_5_vl folder and six conversations (two text only, one with two images).
struct FinetuneData {
    QTemporaryDir dir;
    std::string root = dir.path().toStdString();
    parallax::testing::QwenFinetuneData made{root};
    const std::string& folder = made.folder;
    const std::string& jsonl = made.jsonl;
    const std::string& problem = made.problem;
    RunSpec spec(int64_t seqLen, const std::string& onTruncate = "drop",
                 const std::string& train = "steps = 4\nglobal_batch = 2\nmicro_batch = 1") const {
        std::vector<SpecIssue> unknown;
        return parseSpec("name = \"vl-lora\"\n[model]\nkind = \"qwen2_5_vl\"\nfrom = \"" + folder +
                             "\"\nseq_len = " + std::to_string(seqLen) +
                             "\n[finetune]\nmode = \"lora\"\nlora_r = 4\nlora_alpha = 8\n"
                             "[data]\nkind = \"conversations\"\npath = \"" + jsonl +
                             "\"\nmax_pixels = 50176\nshuffle = false\non_truncate = \"" + onTruncate +
                             "\"\n[train]\n" + train + "\n[launch]\ntarget = \"local\"\ndevice = \"cpu\"\n",
                         "vl-lora.toml", unknown);
    }
};

class FinetuneRowsTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() { s_data = new FinetuneData; }
    static void TearDownTestSuite() {
        delete s_data;
        s_data = nullptr;
    }
    void SetUp() override {
        if (!s_data->problem.empty()) GTEST_SKIP() << s_data->problem;
        page.setStorePath(QDir(s_data->dir.path()).filePath(QStringLiteral("parallax.db")));
        page.resize(1400, 900);
        page.show();
    }
    bool read(const RunSpec& spec) {
        page.setSpec(spec);
        ConversationDatasetModel* dataset = rows()->dataset();
        return waitFor([&] { return dataset->isKnown(); }, 20000);
    }
    FinetuneRows* rows() const { return page.finetuneRows(); }
    QStringList issues() const { return shownIssues(page); }

    static FinetuneData* s_data;
    NewRunPage page;
};

FinetuneData* FinetuneRowsTest::s_data = nullptr;

TEST_F(FinetuneRowsTest, SaysWhatTheFolderHoldsAndWhatTrains) {
    ASSERT_TRUE(read(s_data->spec(512)));
    const QLabel* model = rows()->modelLabel();
    ASSERT_TRUE(model->isVisibleTo(&page));
    const QStringList lines = model->text().split(QLatin1Char('\n'));
    ASSERT_GE(lines.size(), 6) << model->text().toStdString();
    EXPECT_EQ(lines[0], QStringLiteral("qwen2_5_vl from Qwen2.5-VL-tiny (qwen2_5_vl (Qwen2_5_VLForConditionalGeneration)); "
                                       "the run starts from its weights"));
    EXPECT_TRUE(lines[1].startsWith(QStringLiteral("2 layers × 64 (4 heads, 2 key/value), FFN 128, vocabulary 151936; "
                                                   "vision tower 2 × 32 (2 heads)")))
        << lines[1].toStdString();
    EXPECT_TRUE(lines[2].contains(QStringLiteral("parameters;"))) << lines[2].toStdString();
    EXPECT_TRUE(lines[3].startsWith(QStringLiteral("vision tower: frozen"))) << lines[3].toStdString();
    EXPECT_TRUE(lines[4].startsWith(QStringLiteral("merger: frozen"))) << lines[4].toStdString();
    EXPECT_TRUE(lines[5].startsWith(QStringLiteral("language model: LoRA r 4 on q_proj, k_proj, v_proj, o_proj, "
                                                   "gate_proj, up_proj, down_proj")))
        << lines[5].toStdString();
    EXPECT_EQ(lines.last(), QStringLiteral("tokenizer: tokenizer.json"));
    // The folder field has its Browse… beside the path.
    const auto* edit = page.findChild<QLineEdit*>(QStringLiteral("model.from.edit"));
    ASSERT_NE(edit, nullptr);
    EXPECT_EQ(edit->text().toStdString(), s_data->folder);

    // The memory per device for the same layout trained whole, with the tower frozen, and with LoRA.
    const QString memory = EstimatePanel::finetuneMemoryText(page.formModel()->spec());
    EXPECT_TRUE(memory.startsWith(QStringLiteral("Per device, by what trains: full: "))) << memory.toStdString();
    EXPECT_TRUE(memory.contains(QStringLiteral(" · full, vision tower, merger frozen: "))) << memory.toStdString();
    EXPECT_TRUE(memory.endsWith(QStringLiteral(" (this spec)"))) << memory.toStdString();
    const auto* shown = page.findChild<QLabel*>(QStringLiteral("estimates.finetuneMemory"));
    ASSERT_NE(shown, nullptr);
    EXPECT_EQ(shown->text(), memory);
}

TEST_F(FinetuneRowsTest, ShowsTheDatasetAndItsFirstSampleWithTheAnswersMarked) {
    ASSERT_TRUE(read(s_data->spec(512)));
    const QStringList summary = rows()->datasetLabel()->text().split(QLatin1Char('\n'));
    ASSERT_GE(summary.size(), 2);
    EXPECT_EQ(summary[0], QStringLiteral("6 samples (2 text only); images per sample: 0 (2) 1 (3) 2 (1)"));
    EXPECT_TRUE(summary[1].startsWith(QStringLiteral("visual tokens per sample 16 / 18 / 53 (min / median / max) at "
                                                     "data.max_pixels = 50176")))
        << summary[1].toStdString();
    const QLabel* preview = rows()->previewLabel();
    ASSERT_TRUE(preview->isVisibleTo(&page));
    const QString html = preview->text();
    EXPECT_TRUE(html.contains(QStringLiteral("&lt;|image_pad|&gt; × 35"))) << html.toStdString();
    EXPECT_TRUE(html.contains(QStringLiteral("<span style=\"background:#c8e6c9\">Colour ramps.&lt;|im_end|&gt;</span>")))
        << html.toStdString();
    EXPECT_FALSE(html.contains(QStringLiteral("<span style=\"background:#c8e6c9\">What is this?")));
    EXPECT_TRUE(issues().filter(QStringLiteral("data.path")).isEmpty()) << issues().join('\n').toStdString();
}

TEST_F(FinetuneRowsTest, NamesTheSampleASequenceCutDropsAndWarnsWhenTheRunWouldRefuse) {
    ASSERT_TRUE(read(s_data->spec(58)));
    EXPECT_TRUE(rows()->datasetLabel()->text().contains(
        QStringLiteral("1 sample dropped: model.seq_len would cut inside an image (chats.jsonl:3)")))
        << rows()->datasetLabel()->text().toStdString();
    EXPECT_TRUE(issues().filter(QStringLiteral("data.path")).isEmpty());

    ASSERT_TRUE(read(s_data->spec(58, "fail")));
    EXPECT_TRUE(waitFor([&] { return !issues().filter(QStringLiteral("would be cut inside an image")).isEmpty(); }))
        << issues().join('\n').toStdString();
    EXPECT_TRUE(rows()->datasetLabel()->text().contains(QStringLiteral("the run refuses to start: 1 sample would be cut")));
}

// The whole path a user takes: the form as shown, Launch, and the run's 200 steps in the store
// lowering the loss on the training answers (the real parallax-cli and worker, detached).
TEST_F(FinetuneRowsTest, LaunchesA200StepLoraRunThatLearnsItsAnswers) {
    ASSERT_TRUE(read(s_data->spec(128, "drop",
                                  "steps = 200\nglobal_batch = 6\nmicro_batch = 3\nlr = 3e-3\nwarmup = 10\n"
                                  "checkpoint_every = 0")));
    ASSERT_TRUE(page.launchButton()->isEnabled()) << page.launchButton()->toolTip().toStdString();
    page.launcher()->setCliPath(QString::fromStdString(parallax::testing::buildDir() + "/app/parallax-cli"));
    page.launch();
    const std::string store = QDir(s_data->dir.path()).filePath(QStringLiteral("parallax.db")).toStdString();
    std::optional<RunRecord> run;
    const bool ended = waitFor(
        [&] {
            try {
                run = RunStore(store).findRun("vl-lora");
            } catch (const StoreError&) {
                return false; // not created yet
            }
            return run && isTerminal(run->state);
        },
        600000);
    ASSERT_TRUE(ended) << page.messageLabel()->text().toStdString();
    ASSERT_EQ(run->state, RunState::Succeeded);
    const std::vector<StepEvent> steps = RunStore(store).metrics(run->id);
    ASSERT_EQ(steps.size(), 200u);
    EXPECT_GT(steps.front().loss, 5.0);
    EXPECT_LT(steps.back().loss, 0.5 * steps.front().loss) << steps.front().loss << " -> " << steps.back().loss;
}

} // namespace
