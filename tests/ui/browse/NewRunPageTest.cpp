// The New run page's form: its editors and rows, the probes (fit, balance, advise), the
// estimates beside the layout, presets and spec files.
#include "NewRunPageSupport.h"

using namespace parallax;
using namespace parallax::test;

// The form is the field table: every field it offers has an editor under the table's label with
// its help, and a field the table keeps to spec files has none.
TEST(NewRunPage, HasAnEditorForEveryOfferedFieldWithItsLabelAndHelp) {
    Page p;
    RunSpec probe;
    for (const SpecField& f : specFields(probe)) {
        const QString path = QString::fromStdString(f.path());
        QWidget* editor = p.page.fieldEditor(path);
        if (!f.info.offered()) {
            EXPECT_EQ(editor, nullptr) << f.path() << " is set in the spec file only";
            continue;
        }
        ASSERT_NE(editor, nullptr) << f.path();
        QLabel* label = p.page.fieldLabel(path);
        ASSERT_NE(label, nullptr) << f.path();
        EXPECT_EQ(label->text(), QString::fromUtf8(f.info.label)) << f.path();
        EXPECT_TRUE(editor->toolTip().contains(QString::fromUtf8(f.info.help))) << f.path();
    }
    // The options of a choice are the table's, with its labels.
    auto* zero = qobject_cast<QComboBox*>(p.page.fieldEditor(QStringLiteral("parallel.zero")));
    ASSERT_NE(zero, nullptr);
    ASSERT_EQ(zero->count(), 4);
    EXPECT_EQ(zero->itemText(3), QStringLiteral("3: + weights (FSDP)"));
    auto* onHang = qobject_cast<QComboBox*>(p.page.fieldEditor(QStringLiteral("telemetry.on_hang")));
    ASSERT_NE(onHang, nullptr);
    EXPECT_EQ(onHang->itemData(1).toString(), QStringLiteral("fail"));
}

// A field that does not matter for the spec is hidden, unless a value other than the default makes
// the validator warn about it.
TEST(NewRunPage, ShowsTheFieldsThatMatterForTheTargetAndTheOnesSetAnyway) {
    Page p;
    NewRunPage& page = p.page;
    QWidget* slurmMode = page.fieldEditor(QStringLiteral("launch.slurm_mode"));
    QWidget* nodes = page.fieldEditor(QStringLiteral("launch.nodes"));
    QWidget* onHostFailure = page.fieldEditor(QStringLiteral("launch.on_host_failure"));
    QWidget* minHosts = page.fieldEditor(QStringLiteral("launch.min_hosts"));
    ASSERT_TRUE(slurmMode && nodes && onHostFailure && minHosts);
    EXPECT_FALSE(slurmMode->isVisibleTo(&page));
    EXPECT_FALSE(onHostFailure->isVisibleTo(&page));

    choose(page.fieldEditor(QStringLiteral("launch.target")), QStringLiteral("slurm"));
    EXPECT_TRUE(slurmMode->isVisibleTo(&page));
    EXPECT_TRUE(nodes->isVisibleTo(&page));
    typeInto(nodes, QStringLiteral("2"));
    EXPECT_EQ(page.formModel()->spec().launch.nodes, 2);

    choose(page.fieldEditor(QStringLiteral("launch.target")), QStringLiteral("hosts"));
    EXPECT_FALSE(slurmMode->isVisibleTo(&page));
    EXPECT_TRUE(nodes->isVisibleTo(&page)) << "set for Slurm, ignored here: shown with its warning";
    EXPECT_TRUE(onHostFailure->isVisibleTo(&page));
    EXPECT_FALSE(minHosts->isVisibleTo(&page)) << "only a run that resumes needs it";
    choose(onHostFailure, QStringLiteral("resume"));
    EXPECT_TRUE(minHosts->isVisibleTo(&page));
    EXPECT_EQ(page.formModel()->spec().launch.on_host_failure, OnHostFailure::Resume);
}

// "Find the largest micro-batch" runs parallax-cli fit on the form's spec (real probe runs): Stop
// ends it and its probe, and its answer goes into the form keeping the global batch.
TEST(NewRunPage, FindsTheLargestMicroBatchByProbesAndUsesIt) {
    const char* build = std::getenv("PARALLAX_BUILD_DIR");
    ASSERT_TRUE(build && *build) << "PARALLAX_BUILD_DIR names the build with parallax-cli";
    Page p;
    NewRunPage& page = p.page;
    page.fitRunner()->setCliPath(QString::fromUtf8(build) + QStringLiteral("/app/parallax-cli"));
    typeInto(page.fieldEditor(QStringLiteral("train.micro_batch")), QStringLiteral("1"));
    typeInto(page.fieldEditor(QStringLiteral("train.global_batch")), QStringLiteral("4")); // 2 per replica
    settle(page);
    ASSERT_FALSE(page.formModel()->hasErrors());
    QStringList lines;
    QObject::connect(page.fitRunner(), &FitRunner::progress, [&](const QString& line) { lines << line; });

    // Stopped while it probes: the probe ends and nothing of it is left beside the store.
    page.fitButton()->click();
    ASSERT_TRUE(waitFor([&] { return lines.join(QChar('\n')).contains(QStringLiteral("probing micro-batch 1")); }, 30000))
        << lines.join(QChar('\n')).toStdString();
    page.fitButton()->click();
    ASSERT_TRUE(waitFor([&] { return !page.fitRunner()->isRunning(); }, 60000));
    EXPECT_TRUE(page.fitStatusLabel()->text().contains(QStringLiteral("Stopped"))) << page.fitStatusLabel()->text().toStdString();
    for (const auto& entry : std::filesystem::directory_iterator(p.dir.path().toStdString()))
        EXPECT_EQ(entry.path().filename().string().find(".fit-"), std::string::npos) << entry.path();

    // Run to the end: micro-batch 1 and 2 (a replica's share) fit this tiny model, with and without
    // activation checkpointing; "Use 2" sets it and the global batch stays.
    lines.clear();
    page.fitButton()->click();
    ASSERT_TRUE(waitFor([&] { return !page.fitRunner()->isRunning(); }, 180000)) << lines.join(QChar('\n')).toStdString();
    EXPECT_TRUE(page.fitStatusLabel()->text().startsWith(QStringLiteral("Largest micro-batch: 2 (peak ")))
        << page.fitStatusLabel()->text().toStdString() << "\n" << lines.join(QChar('\n')).toStdString();
    ASSERT_TRUE(page.fitUseButton()->isVisibleTo(&page));
    EXPECT_EQ(page.fitUseButton()->text(), QStringLiteral("Use 2"));
    page.fitUseButton()->click();
    EXPECT_EQ(page.formModel()->spec().train.micro_batch, 2);
    EXPECT_EQ(page.formModel()->spec().train.global_batch, 4);
    EXPECT_FALSE(page.fitUseButton()->isVisibleTo(&page)) << "the form has the answer now";
}

// "Balance the stages by measured time" runs parallax-cli balance on the form's spec (a real probe
// run whose ranks time their units): each stage's time on the spec's split and on the balanced one,
// and "Use" puts the balanced split in the form.
TEST(NewRunPage, BalancesThePipelineStagesByAProbeAndUsesTheSplit) {
    const char* build = std::getenv("PARALLAX_BUILD_DIR");
    ASSERT_TRUE(build && *build) << "PARALLAX_BUILD_DIR names the build with parallax-cli";
    Page p;
    NewRunPage& page = p.page;
    page.balanceRunner()->setCliPath(QString::fromUtf8(build) + QStringLiteral("/app/parallax-cli"));
    EXPECT_FALSE(page.balanceButton()->isVisibleTo(&page)) << "no pipeline, nothing to balance";
    typeInto(page.fieldEditor(QStringLiteral("parallel.dp")), QStringLiteral("1"));
    typeInto(page.fieldEditor(QStringLiteral("parallel.pp")), QStringLiteral("2"));
    typeInto(page.fieldEditor(QStringLiteral("model.layers")), QStringLiteral("6"));
    EXPECT_TRUE(page.balanceButton()->isVisibleTo(&page));
    // Five of the six blocks on the first stage, as a spec file may split them: whatever this shared
    // machine does to either rank's speed (a core can run at half speed for seconds), a split that
    // moves blocks off the first stage is faster.
    page.formModel()->edit(QStringLiteral("parallel.stage_layers"), [](RunSpec& s) { s.parallel.stage_layers = {5, 1}; });
    settle(page);
    ASSERT_FALSE(page.formModel()->hasErrors());

    std::optional<BalanceRunner::Result> result;
    QObject::connect(page.balanceRunner(), &BalanceRunner::finished, [&](const BalanceRunner::Result& r) { result = r; });
    page.balanceButton()->click();
    ASSERT_TRUE(waitFor([&] { return !page.balanceRunner()->isRunning(); }, 180000))
        << page.balanceStatusLabel()->text().toStdString();
    const QString answer = page.balanceStatusLabel()->text();
    std::printf("%s\n", qPrintable(answer));
    ASSERT_TRUE(result.has_value()) << answer.toStdString();
    ASSERT_EQ(result->layersBefore(), (QVector<qint64>{5, 1}));
    const QVector<qint64> balanced = result->layers();
    ASSERT_EQ(balanced.size(), 2);
    EXPECT_LT(balanced[0], 5) << answer.toStdString();
    EXPECT_EQ(balanced[0] + balanced[1], 6);
    EXPECT_LT(result->slowest(), result->slowestBefore());
    const QString split = QStringLiteral("[%1, %2]").arg(balanced[0]).arg(balanced[1]);
    EXPECT_TRUE(answer.startsWith(QStringLiteral("Slowest stage "))) << answer.toStdString();
    EXPECT_TRUE(answer.contains(QStringLiteral(" ms with [5, 1] blocks, "))) << answer.toStdString();
    EXPECT_TRUE(answer.contains(QStringLiteral(" ms balanced with ") + split + QLatin1Char(' '))) << answer.toStdString();
    EXPECT_TRUE(answer.contains(QStringLiteral("Each stage: "))) << answer.toStdString();
    ASSERT_TRUE(page.balanceUseButton()->isVisibleTo(&page)) << answer.toStdString();
    EXPECT_EQ(page.balanceUseButton()->text(), QStringLiteral("Use ") + split);
    page.balanceUseButton()->click();
    EXPECT_EQ(page.formModel()->spec().parallel.stage_layers, (std::vector<int64_t>{balanced[0], balanced[1]}));
    EXPECT_EQ(page.formModel()->spec().parallel.stage_split.value(), StageSplit::Profile);
    EXPECT_FALSE(page.balanceUseButton()->isVisibleTo(&page)) << "the form has the split now";
    EXPECT_TRUE(page.balanceStatusLabel()->text().contains(QStringLiteral("The form splits the stages this way now")))
        << page.balanceStatusLabel()->text().toStdString();

    // Measured for six blocks: with eight, the answer is not offered.
    typeInto(page.fieldEditor(QStringLiteral("model.layers")), QStringLiteral("8"));
    EXPECT_FALSE(page.balanceUseButton()->isVisibleTo(&page));
    EXPECT_TRUE(page.balanceStatusLabel()->text().contains(QStringLiteral("balance again")))
        << page.balanceStatusLabel()->text().toStdString();
    for (const auto& entry : std::filesystem::directory_iterator(p.dir.path().toStdString()))
        EXPECT_EQ(entry.path().filename().string().find(".balance"), std::string::npos) << entry.path();
}

// The rows of `balance --csv` in stage order; its header, progress and malformed lines are no stage.
TEST(BalanceRunner, ReadsTheStagesOfItsCsvAndSkipsWhatIsNotOne) {
    const BalanceRunner::Result r = BalanceRunner::parse(QStringLiteral(
        "stage,blocks_before,ms_before,blocks,ms\n0,3,90.5,2,61\nbalance x: timing...\n1,1,30,2,60.25\n"
        "1,x,1,1,1\n3,1,1,1,1\n"));
    ASSERT_EQ(r.stages.size(), 2);
    EXPECT_EQ(r.layersBefore(), (QVector<qint64>{3, 1}));
    EXPECT_EQ(r.layers(), (QVector<qint64>{2, 2}));
    EXPECT_DOUBLE_EQ(r.slowestBefore(), 90.5);
    EXPECT_DOUBLE_EQ(r.slowest(), 61);
    EXPECT_TRUE(BalanceRunner::parse(QStringLiteral("no rows\n")).stages.isEmpty());
}

// "Try the top 3 layouts" runs parallax-cli advise on the spec's processes (real probe runs): every
// layout of them listed, three tried (and the calibration), and "Use" sets the fastest measured.
TEST(NewRunPage, TriesTheTopLayoutsOfItsProcessesAndUsesTheFastest) {
    const char* build = std::getenv("PARALLAX_BUILD_DIR");
    ASSERT_TRUE(build && *build) << "PARALLAX_BUILD_DIR names the build with parallax-cli";
    Page p;
    NewRunPage& page = p.page;
    page.adviseRunner()->setCliPath(QString::fromUtf8(build) + QStringLiteral("/app/parallax-cli"));
    settle(page);
    ASSERT_FALSE(page.formModel()->hasErrors());
    page.adviceButton()->click();
    ASSERT_TRUE(waitFor([&] { return !page.adviseRunner()->isRunning(); }, 240000))
        << page.adviceStatusLabel()->text().toStdString();
    const QVector<LayoutAdviceRow>& rows = page.adviceModel()->rows();
    // dp2 with ZeRO 0-3, tp2, pp2.
    ASSERT_EQ(rows.size(), 6) << page.adviceStatusLabel()->text().toStdString();
    // Three chosen by the model, and the calibration's dp2 zero0 measured besides when it is not
    // among them.
    int tried = 0;
    bool calibrationTried = false;
    for (const LayoutAdviceRow& r : rows) {
        tried += r.rank > 0;
        calibrationTried |= r.rank > 0 && r.label == QStringLiteral("dp2 tp1 pp1 zero0");
    }
    EXPECT_TRUE(calibrationTried);
    EXPECT_TRUE(tried == 3 || tried == 4) << tried;
    const std::optional<LayoutAdviceRow> best = page.adviceModel()->best();
    ASSERT_TRUE(best.has_value());
    EXPECT_EQ(rows.front().label, best->label) << "the fastest comes first";
    for (const LayoutAdviceRow& r : rows) {
        if (r.rank > 0) {
            EXPECT_GE(best->tokensPerS, r.tokensPerS) << r.label.toStdString();
        }
    }
    EXPECT_TRUE(page.adviceStatusLabel()->text().startsWith(QStringLiteral("Fastest measured: ") + best->label));
    if (best->label != QStringLiteral("dp2 tp1 pp1 zero0")) {
        ASSERT_TRUE(page.adviceUseButton()->isVisibleTo(&page));
        page.adviceUseButton()->click();
    }
    RunSpec expected = page.formModel()->spec();
    ASSERT_TRUE(applyLayoutLabel(best->label, expected));
    EXPECT_EQ(page.formModel()->spec().parallel.dp, expected.parallel.dp);
    EXPECT_EQ(page.formModel()->spec().parallel.tp, expected.parallel.tp);
    EXPECT_EQ(page.formModel()->spec().parallel.pp, expected.parallel.pp);
    EXPECT_EQ(page.formModel()->spec().parallel.zero, expected.parallel.zero);
    for (const auto& entry : std::filesystem::directory_iterator(p.dir.path().toStdString()))
        EXPECT_EQ(entry.path().filename().string().find(".advise-"), std::string::npos) << entry.path();
}

// Shown in a window, the form lays out every combination of hidden and shown rows and issue
// messages: kinds, targets, an invalid layout, and back.
TEST(NewRunPage, LaysOutEveryCombinationOfRowsInAWindow) {
    Page p;
    NewRunPage& page = p.page;
    page.resize(1280, 720);
    page.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&page));
    RunSpec spec = tinySpec("shown");
    std::vector<RunSpec> specs;
    for (const ModelKind kind : {ModelKind::Gpt, ModelKind::QwenImageVae, ModelKind::Qwen2_5_Vl}) {
        for (const Target target : {Target::Local, Target::Hosts, Target::Slurm}) {
            RunSpec s = spec;
            s.model.kind = kind;
            s.launch.target = target;
            specs.push_back(s);
            s.parallel.tp = 3; // an error beside tp and heads
            s.launch.processes = 4;
            s.launch.nodes = 2; // set, and shown with its warning off Slurm
            specs.push_back(s);
        }
    }
    specs.push_back(spec);
    for (const RunSpec& s : specs) {
        page.setSpec(s);
        page.formModel()->validateNow();
        QTest::qWait(20);
        page.resize(page.width() == 1280 ? 1920 : 1280, page.width() == 1280 ? 1080 : 720);
        QTest::qWait(20);
    }
    EXPECT_TRUE(page.fieldEditor(QStringLiteral("train.steps"))->isVisible());
    EXPECT_FALSE(page.fieldEditor(QStringLiteral("launch.partition"))->isVisible());
    EXPECT_TRUE(page.fieldIssueLabel(QStringLiteral("parallel.tp"))->text().isEmpty());
}

// A field's message wraps onto as many lines as the form's width leaves it, and the form makes
// room for all of them: at 1280 x 720 the long messages of tp = 3 (heads, FFN width, vocabulary)
// take three lines in the narrow field column, and none is cut off, however the window is resized.
TEST(NewRunPage, MakesRoomForEveryLineOfAWrappedFieldMessage) {
    Page p;
    NewRunPage& page = p.page;
    page.resize(1280, 720);
    page.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&page));
    RunSpec spec = tinySpec("wrapped");
    spec.model.kind = ModelKind::Gpt;
    spec.parallel.dp = 2;
    spec.parallel.tp = 3;
    page.setSpec(spec);
    page.formModel()->validateNow();
    for (const QSize size : {QSize(1280, 720), QSize(1000, 720), QSize(700, 720), QSize(1920, 1080), QSize(1110, 720)}) {
        page.resize(size);
        QTest::qWait(30);
        int checked = 0, wrapped = 0;
        for (const QString& path : {QStringLiteral("model.heads"), QStringLiteral("model.ffn"), QStringLiteral("model.vocab")}) {
            QLabel* issue = page.fieldIssueLabel(path);
            ASSERT_NE(issue, nullptr) << path.toStdString();
            if (!issue->isVisible()) continue;
            ++checked;
            const int needed = issue->heightForWidth(issue->width());
            wrapped += needed > issue->fontMetrics().lineSpacing() * 3 / 2 ? 1 : 0;
            const int slack = issue->parentWidget()->height() - issue->parentWidget()->heightForWidth(issue->parentWidget()->width());
            EXPECT_LE(slack, issue->fontMetrics().lineSpacing())
                << path.toStdString() << " at " << size.width() << "x" << size.height() << ": the row is " << slack
                << " pixels taller than its field and message";
            EXPECT_GE(issue->height(), needed)
                << path.toStdString() << " at " << size.width() << "x" << size.height() << ": \""
                << issue->text().toStdString() << "\" is " << issue->width() << " wide"
;
        }
        EXPECT_EQ(checked, 3) << size.width() << "x" << size.height();
        if (size.width() <= 1000) {
            EXPECT_GT(wrapped, 0) << "no message wraps at " << size.width() << "x" << size.height();
        }
    }
}

TEST(NewRunPage, ShowsTheValidatorsMessageBesideTheFieldAndDisablesLaunch) {
    Page p;
    NewRunPage& page = p.page;
    EXPECT_TRUE(page.launchButton()->isEnabled()) << page.messageLabel()->text().toStdString();

    // heads 6 with tp 4: the validator's message appears beside model.heads.
    typeInto(page.fieldEditor(QStringLiteral("model.dim")), QStringLiteral("96"));
    typeInto(page.fieldEditor(QStringLiteral("model.heads")), QStringLiteral("6"));
    typeInto(page.fieldEditor(QStringLiteral("parallel.tp")), QStringLiteral("4"));
    EXPECT_EQ(page.formModel()->spec().model.heads, std::optional<int64_t>(6));
    EXPECT_EQ(page.formModel()->spec().parallel.tp, 4);
    settle(page);

    QLabel* heads = page.fieldIssueLabel(QStringLiteral("model.heads"));
    ASSERT_NE(heads, nullptr);
    EXPECT_FALSE(heads->isHidden());
    EXPECT_TRUE(heads->text().contains(QStringLiteral("model.heads = 6 is not divisible by parallel.tp = 4")))
        << heads->text().toStdString();
    EXPECT_EQ(heads->property("severity").toString(), QStringLiteral("error"));
    EXPECT_TRUE(heads->styleSheet().contains(QStringLiteral("#c62828")));
    EXPECT_FALSE(page.launchButton()->isEnabled());
    // A field without an issue shows nothing.
    EXPECT_TRUE(page.fieldIssueLabel(QStringLiteral("train.steps"))->isHidden());

    typeInto(page.fieldEditor(QStringLiteral("parallel.tp")), QStringLiteral("2"));
    settle(page);
    EXPECT_TRUE(heads->isHidden());
    EXPECT_TRUE(page.launchButton()->isEnabled());
}

TEST(NewRunPage, ProcessCountThatDoesNotMatchTheLayoutIsAnError) {
    Page p;
    NewRunPage& page = p.page;
    typeInto(page.fieldEditor(QStringLiteral("launch.processes")), QStringLiteral("3"));
    settle(page);
    QLabel* label = page.fieldIssueLabel(QStringLiteral("launch.processes"));
    EXPECT_FALSE(label->isHidden());
    EXPECT_TRUE(label->text().contains(QStringLiteral("dp*tp*pp = 2 but launch asks for 3 processes")))
        << label->text().toStdString();
    EXPECT_FALSE(page.launchButton()->isEnabled());
}

TEST(NewRunPage, WarningsAreAmberAndDoNotBlockLaunch) {
    Page p;
    NewRunPage& page = p.page;
    typeInto(page.fieldEditor(QStringLiteral("train.warmup")), QStringLiteral("50")); // >= steps 20
    settle(page);
    QLabel* label = page.fieldIssueLabel(QStringLiteral("train.warmup"));
    EXPECT_FALSE(label->isHidden());
    EXPECT_EQ(label->property("severity").toString(), QStringLiteral("warning"));
    EXPECT_TRUE(page.launchButton()->isEnabled());
}

TEST(NewRunPage, TextThatIsNotANumberBlocksLaunchUntilFixed) {
    Page p;
    NewRunPage& page = p.page;
    typeInto(page.fieldEditor(QStringLiteral("train.lr")), QStringLiteral("3e-"));
    settle(page);
    QLabel* label = page.fieldIssueLabel(QStringLiteral("train.lr"));
    EXPECT_TRUE(label->text().contains(QStringLiteral("is not a number"))) << label->text().toStdString();
    EXPECT_FALSE(page.launchButton()->isEnabled());
    // The text stays as typed while another field changes.
    typeInto(page.fieldEditor(QStringLiteral("train.steps")), QStringLiteral("30"));
    EXPECT_EQ(qobject_cast<QLineEdit*>(page.fieldEditor(QStringLiteral("train.lr")))->text(), QStringLiteral("3e-"));
    typeInto(page.fieldEditor(QStringLiteral("train.lr")), QStringLiteral("3e-4"));
    settle(page);
    EXPECT_DOUBLE_EQ(page.formModel()->spec().train.lr, 3e-4);
    EXPECT_TRUE(label->isHidden());
    EXPECT_TRUE(page.launchButton()->isEnabled());
}

TEST(NewRunPage, MemoryPerDeviceShrinksWithZeroStageAndReplicas) {
    Page p;
    NewRunPage& page = p.page;
    SpecFormModel* model = page.formModel();
    MemoryBar* bar = page.estimatePanel()->memoryBar();
    settle(page);
    const double zero0 = bar->total();
    const double weights0 = bar->segments().at(0).bytes;
    ASSERT_GT(zero0, 0);

    choose(page.fieldEditor(QStringLiteral("parallel.zero")), QStringLiteral("3"));
    settle(page);
    EXPECT_EQ(model->spec().parallel.zero, 3);
    const double zero3 = bar->total();
    EXPECT_LT(zero3, zero0);
    EXPECT_LT(bar->segments().at(0).bytes, weights0); // weights sharded over dp = 2

    // More replicas: each holds a smaller shard under ZeRO-3.
    typeInto(page.fieldEditor(QStringLiteral("parallel.dp")), QStringLiteral("4"));
    typeInto(page.fieldEditor(QStringLiteral("train.global_batch")), QStringLiteral("16"));
    settle(page);
    EXPECT_EQ(model->spec().parallel.dp, 4);
    EXPECT_LT(bar->segments().at(0).bytes, weights0 / 2 * 1.0001);
    EXPECT_LT(bar->segments().at(2).bytes, model->estimates()->memory.optimizer * 1.0001);
    EXPECT_EQ(page.estimatePanel()->deviceGrid()->dp(), 4);
    EXPECT_TRUE(page.microBatchesText().startsWith(QStringLiteral("1 = global 16 / (dp 4 × micro 4)")))
        << page.microBatchesText().toStdString();
    // The estimates the panel shows are the model's.
    EXPECT_DOUBLE_EQ(bar->total(), model->estimates()->memory.total());
}

TEST(NewRunPage, DeviceMemoryIsTheGpuSettingOnCudaAndRamPerRankOnCpu) {
    Page p;
    NewRunPage& page = p.page;
    settle(page);
    MemoryBar* bar = page.estimatePanel()->memoryBar();
    EXPECT_NEAR(bar->capacity(), SpecFormModel::physicalMemoryBytes() / 2, 1.0); // dp 2 on this machine
    choose(page.fieldEditor(QStringLiteral("launch.device")), QStringLiteral("cuda"));
    settle(page);
    EXPECT_DOUBLE_EQ(bar->capacity(), 141.0 * 1024 * 1024 * 1024);
    page.formModel()->setCudaMemoryGiB(80);
    settle(page);
    EXPECT_DOUBLE_EQ(bar->capacity(), 80.0 * 1024 * 1024 * 1024);
}

TEST(NewRunPage, PipelineShowsItsBubbleAndStagesInTheGrid) {
    Page p;
    NewRunPage& page = p.page;
    typeInto(page.fieldEditor(QStringLiteral("parallel.pp")), QStringLiteral("2"));
    typeInto(page.fieldEditor(QStringLiteral("train.global_batch")), QStringLiteral("32")); // m = 4
    settle(page);
    // (p-1)/(m+p-1) = 1/5
    EXPECT_TRUE(page.estimatePanel()->bubbleText().startsWith(QStringLiteral("20.0%"))) << page.estimatePanel()->bubbleText().toStdString();
    DeviceGridDiagram* grid = page.estimatePanel()->deviceGrid();
    EXPECT_EQ(grid->pp(), 2);
    EXPECT_EQ(grid->dp() * grid->tp() * grid->pp(), page.formModel()->spec().worldSize());
}

TEST(NewRunPage, ParametersAreTheWholeModelWithWhatEachStageHolds) {
    Page p;
    NewRunPage& page = p.page;
    typeInto(page.fieldEditor(QStringLiteral("parallel.pp")), QStringLiteral("2"));
    typeInto(page.fieldEditor(QStringLiteral("train.global_batch")), QStringLiteral("32"));
    settle(page);
    const std::optional<Estimates>& e = page.formModel()->estimates();
    ASSERT_TRUE(e.has_value());
    // The stages' shares add up to the whole model (fp32, no ZeRO-3, no tensor parallelism).
    const std::vector<int64_t> held = EstimatePanel::heldParameters(page.formModel()->spec(), *e);
    ASSERT_EQ(held.size(), 2u);
    EXPECT_EQ(held[0] + held[1], e->params);
    EXPECT_GT(held[0], 0);
    EXPECT_GT(held[1], 0);
    const auto n = [](double v) { return QString::fromStdString(formatCount(v)); };
    const QString text = page.estimatePanel()->parametersText();
    EXPECT_TRUE(text.startsWith(n(double(e->params)) + QStringLiteral(" whole model"))) << text.toStdString();
    EXPECT_TRUE(text.contains(QStringLiteral("stage 0: %1, stage 1: %2").arg(n(double(held[0])), n(double(held[1])))))
        << text.toStdString();
    // The memory figure says what it leaves out.
    EXPECT_TRUE(page.estimatePanel()->memoryTitleText().contains(QStringLiteral("runtime")))
        << page.estimatePanel()->memoryTitleText().toStdString();

    // Without a pipeline or tensor parallelism every rank holds the whole model: one figure.
    typeInto(page.fieldEditor(QStringLiteral("parallel.pp")), QStringLiteral("1"));
    settle(page);
    EXPECT_EQ(page.estimatePanel()->parametersText(),
              n(double(page.formModel()->estimates()->params)) + QStringLiteral(" whole model"));
}

// Qwen-Image's transformer reads latents and prompt states: the form offers its prompt width and
// no vocabulary, a LoRA run lists DiffSynth's targets, and text data is refused beside data.kind.
TEST(NewRunPage, QwenImageOffersItsPromptWidthAndReadsLatents) {
    Page p;
    NewRunPage& page = p.page;
    page.resize(1280, 720);
    page.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&page));
    RunSpec spec = parseSpec("name = \"image\"\n[model]\nkind = \"qwen_image\"\n[finetune]\nmode = \"lora\"\n");
    page.setSpec(spec);
    page.formModel()->validateNow();
    EXPECT_TRUE(page.fieldEditor(QStringLiteral("model.text_dim"))->isVisible());
    EXPECT_FALSE(page.fieldEditor(QStringLiteral("model.vocab"))->isVisible());
    EXPECT_FALSE(page.fieldEditor(QStringLiteral("model.kv_heads"))->isVisible());
    EXPECT_TRUE(page.launchButton()->isEnabled()) << page.messageLabel()->text().toStdString();
    EXPECT_EQ(page.formModel()->spec().finetune.lora_targets.size(), 12u);
    ASSERT_TRUE(page.formModel()->estimates().has_value());
    EXPECT_GT(page.formModel()->estimates()->params, 0);

    spec.data.kind = DataKind::Text;
    spec.data.path = "corpus.txt";
    page.setSpec(spec);
    page.formModel()->validateNow();
    settle(page);
    QLabel* data = page.fieldIssueLabel(QStringLiteral("data.kind"));
    ASSERT_NE(data, nullptr);
    EXPECT_TRUE(data->text().contains(QStringLiteral("data.kind = \"latents\""))) << data->text().toStdString();
    EXPECT_FALSE(page.launchButton()->isEnabled());
}

TEST(NewRunPage, MemoryPerRankDividesByTheLayoutsRanksNotAnInvalidProcessCount) {
    Page p;
    NewRunPage& page = p.page;
    typeInto(page.fieldEditor(QStringLiteral("launch.processes")), QStringLiteral("6")); // dp*tp*pp = 2
    settle(page);
    EXPECT_EQ(page.formModel()->ranksPerNode(), 2);
    EXPECT_NEAR(page.estimatePanel()->memoryBar()->capacity(), SpecFormModel::physicalMemoryBytes() / 2, 1.0);
}

TEST(NewRunPage, PresetChangesDropHandSetDimensionsAndCustomKeepsThem) {
    Page p;
    NewRunPage& page = p.page;
    typeInto(page.fieldEditor(QStringLiteral("model.layers")), QStringLiteral("4"));
    EXPECT_EQ(page.formModel()->spec().model.layers, std::optional<int64_t>(4));
    auto* preset = page.fieldEditor(QStringLiteral("model.preset"))->findChild<QComboBox*>();
    ASSERT_NE(preset, nullptr);
    const int small = preset->findData(QStringLiteral("small"));
    preset->setCurrentIndex(small);
    emit preset->activated(small);
    ASSERT_EQ(p.asked.size(), 1); // the layers typed by hand go
    EXPECT_EQ(page.formModel()->spec().model.preset, "small");
    EXPECT_FALSE(page.formModel()->spec().model.layers.has_value());
    EXPECT_EQ(qobject_cast<QSpinBox*>(page.fieldEditor(QStringLiteral("model.layers")))->value(), 6); // gpt small

    const int custom = preset->findData(QStringLiteral("custom"));
    preset->setCurrentIndex(custom);
    emit preset->activated(custom);
    const ModelSpec& m = page.formModel()->spec().model;
    EXPECT_EQ(m.preset, "custom");
    EXPECT_EQ(m.layers, std::optional<int64_t>(6));
    EXPECT_EQ(m.dim, std::optional<int64_t>(256));
    EXPECT_FALSE(m.image_size.has_value()); // gpt has no image side
}

TEST(NewRunPage, LoadsAndSavesSpecsKeepingUnknownKeys) {
    Page p;
    NewRunPage& page = p.page;
    const QString in = p.dir.filePath(QStringLiteral("in.toml"));
    QFile file(in);
    ASSERT_TRUE(file.open(QIODevice::WriteOnly));
    file.write("name = \"loaded\"\n[model]\nkind = \"gpt\"\nfuture_knob = 3\n[train]\nsteps = 77\n[data]\nkind = \"synthetic\"\n");
    file.close();
    QString error;
    ASSERT_TRUE(page.loadSpecFile(in, &error)) << error.toStdString();
    EXPECT_EQ(page.formModel()->spec().train.steps, 77);
    EXPECT_EQ(qobject_cast<QSpinBox*>(page.fieldEditor(QStringLiteral("train.steps")))->value(), 77);
    EXPECT_EQ(qobject_cast<QLineEdit*>(page.fieldEditor(QStringLiteral("name")))->text(), QStringLiteral("loaded"));
    EXPECT_TRUE(page.messageLabel()->text().contains(QStringLiteral("future_knob")));

    typeInto(page.fieldEditor(QStringLiteral("train.steps")), QStringLiteral("78"));
    const QString out = p.dir.filePath(QStringLiteral("out.toml"));
    ASSERT_TRUE(page.saveSpecFile(out, &error)) << error.toStdString();
    const RunSpec saved = readSpecFile(out.toStdString());
    EXPECT_EQ(saved.train.steps, 78);
    EXPECT_NE(saved.preserved_toml.find("future_knob"), std::string::npos);

    QFile bad(p.dir.filePath(QStringLiteral("bad.toml")));
    ASSERT_TRUE(bad.open(QIODevice::WriteOnly));
    bad.write("[train]\nsteps = \"ten\"\n");
    bad.close();
    EXPECT_FALSE(page.loadSpecFile(bad.fileName(), &error));
    EXPECT_TRUE(error.contains(QStringLiteral("train.steps"))) << error.toStdString();
    EXPECT_EQ(page.formModel()->spec().train.steps, 78); // the form keeps what it had
}

TEST(NewRunPage, PresetsComeFromResourcesRuns) {
    const QMap<QString, QString> presets = NewRunPage::presetFiles();
    ASSERT_TRUE(presets.contains(QStringLiteral("quickstart"))) << NewRunPage::presetDirectories().join(',').toStdString();
    Page p;
    p.page.loadPreset(QStringLiteral("quickstart"));
    EXPECT_EQ(p.page.formModel()->spec().name, "quickstart");
    EXPECT_TRUE(p.page.sourcePath().isEmpty()); // saving does not overwrite the example
}
