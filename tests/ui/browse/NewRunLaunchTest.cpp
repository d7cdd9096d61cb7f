// The New run page's launch side: the commands it copies, clusters and issues a change brings,
// what it asks before discarding edits, Resume with changes, Launch, and its messages.
#include "NewRunPageSupport.h"

using namespace parallax;
using namespace parallax::test;

TEST(NewRunPage, CopiesTheLauncherCommandForTheSpec) {
    Page p;
    NewRunPage& page = p.page;
    page.copyLaunchCommand();
    const QString line = QApplication::clipboard()->text();
    EXPECT_TRUE(line.contains(QStringLiteral("mpirun"))) << line.toStdString();
    EXPECT_TRUE(line.contains(QStringLiteral("-np 2"))) << line.toStdString();
    EXPECT_TRUE(line.contains(QStringLiteral("parallax-worker --spec ") + p.dir.path() + QStringLiteral("/specs/form-")))
        << line.toStdString();
}

TEST(NewRunPage, TargetHostsPicksAClusterProfileAndRoundTrips) {
    ProfileFolders folders;
    ProfileFolders::write(folders.first, QStringLiteral("lab"), "hosts = [\"node1:2\", \"node2:2\"]\n");
    ProfileFolders::write(folders.second, QStringLiteral("gpu"), "hosts = [\"g1:8\"]\n");
    Page p;
    NewRunPage& page = p.page;
    auto* combo = qobject_cast<QComboBox*>(page.fieldEditor(QStringLiteral("launch.cluster")));
    ASSERT_NE(combo, nullptr);
    choose(page.fieldEditor(QStringLiteral("launch.target")), QStringLiteral("hosts"));
    ASSERT_EQ(combo->count(), 3);
    EXPECT_EQ(combo->itemText(0), QStringLiteral("hosts listed in the spec"));
    EXPECT_EQ(combo->currentData().toString(), QString());
    EXPECT_TRUE(combo->isVisibleTo(&page));
    EXPECT_TRUE(page.fieldEditor(QStringLiteral("launch.hosts"))->isVisibleTo(&page));

    // Hosts typed first, then a profile: the profile names the hosts, the list goes.
    page.formModel()->setField(QStringLiteral("launch.hosts"), QStringList{QStringLiteral("a:1"), QStringLiteral("b:1")});
    choose(combo, QStringLiteral("lab"));
    EXPECT_EQ(page.formModel()->spec().launch.cluster, "lab");
    EXPECT_TRUE(page.formModel()->spec().launch.hosts.empty());
    EXPECT_FALSE(page.fieldEditor(QStringLiteral("launch.hosts"))->isVisibleTo(&page));
    settle(page);
    EXPECT_TRUE(page.formModel()->issuesFor(QStringLiteral("launch.hosts")).empty());

    // Saved and loaded again, the profile is the one chosen.
    const QString out = p.dir.filePath(QStringLiteral("on-lab.toml"));
    QString error;
    ASSERT_TRUE(page.saveSpecFile(out, &error)) << error.toStdString();
    EXPECT_EQ(readSpecFile(out.toStdString()).launch.cluster, "lab");
    NewRunPage other;
    ASSERT_TRUE(other.loadSpecFile(out, &error)) << error.toStdString();
    auto* otherCombo = qobject_cast<QComboBox*>(other.fieldEditor(QStringLiteral("launch.cluster")));
    ASSERT_NE(otherCombo, nullptr);
    EXPECT_EQ(otherCombo->currentData().toString(), QStringLiteral("lab"));
    EXPECT_EQ(otherCombo->currentText(), QStringLiteral("lab (2 hosts)"));

    // Back to the spec's own list.
    choose(combo, QString());
    EXPECT_TRUE(page.formModel()->spec().launch.cluster.empty());
    EXPECT_TRUE(page.fieldEditor(QStringLiteral("launch.hosts"))->isVisibleTo(&page));

    // A profile written later is offered when the page is shown again; one named nowhere is shown
    // as such.
    ProfileFolders::write(folders.first, QStringLiteral("later"), "hosts = [\"x:1\"]\n");
    page.show();
    EXPECT_GE(combo->findData(QStringLiteral("later")), 0);
    RunSpec gone = tinySpec("gone");
    gone.launch.target = Target::Hosts;
    gone.launch.cluster = "gone";
    page.setSpec(gone);
    EXPECT_EQ(combo->currentText(), QStringLiteral("gone (no such profile)"));
    EXPECT_EQ(combo->currentData().toString(), QStringLiteral("gone"));
}

// Issue 19: setting parallel.tp = 3 marked model.heads, model.ffn and model.vocab, fields the person
// had not touched, and nothing beside parallel.tp.
TEST(NewRunPage, AnIssueAChangeBringsAboutIsShownBesideTheChangedField) {
    Page p;
    NewRunPage& page = p.page;
    // A machine where 6 ranks fit, so that only the layout's issues come.
    page.formModel()->setMachine(machineOf(64));
    settle(page);
    typeInto(page.fieldEditor(QStringLiteral("parallel.tp")), QStringLiteral("3"));
    settle(page);
    QLabel* tp = page.fieldIssueLabel(QStringLiteral("parallel.tp"));
    EXPECT_FALSE(tp->isHidden());
    EXPECT_EQ(tp->property("severity").toString(), QStringLiteral("error"));
    EXPECT_TRUE(tp->text().contains(QStringLiteral("This value conflicts with model.heads: model.heads = 4 is not "
                                                   "divisible by parallel.tp = 3")))
        << tp->text().toStdString();
    // The list of issues says which change brought them.
    auto* list = page.findChild<QListWidget*>();
    ASSERT_NE(list, nullptr);
    ASSERT_GE(list->count(), 1);
    EXPECT_TRUE(list->item(0)->text().endsWith(QStringLiteral("(since parallel.tp was changed)")))
        << list->item(0)->text().toStdString();
    // The field the validator names still shows it too.
    QLabel* heads = page.fieldIssueLabel(QStringLiteral("model.heads"));
    EXPECT_FALSE(heads->isHidden());
    EXPECT_TRUE(heads->text().startsWith(QStringLiteral("model.heads = 4 is not divisible by parallel.tp = 3")))
        << heads->text().toStdString();
    EXPECT_EQ(page.formModel()->issuesCausedBy(QStringLiteral("parallel.tp")).size(),
              page.formModel()->issuesFor(QStringLiteral("model.heads")).size() +
                  page.formModel()->issuesFor(QStringLiteral("model.ffn")).size() +
                  page.formModel()->issuesFor(QStringLiteral("model.vocab")).size());

    // An edit of an unrelated field leaves the marker where the change was made.
    typeInto(page.fieldEditor(QStringLiteral("train.steps")), QStringLiteral("30"));
    settle(page);
    EXPECT_TRUE(tp->text().contains(QStringLiteral("conflicts with model.heads"))) << tp->text().toStdString();

    // A dimension changed by hand that breaks the layout is marked where it was changed, and the
    // layout field does not take the blame.
    typeInto(page.fieldEditor(QStringLiteral("parallel.tp")), QStringLiteral("2"));
    settle(page);
    EXPECT_TRUE(tp->isHidden()) << tp->text().toStdString();
    typeInto(page.fieldEditor(QStringLiteral("model.heads")), QStringLiteral("3"));
    settle(page);
    EXPECT_TRUE(heads->text().contains(QStringLiteral("model.heads = 3 is not divisible by parallel.tp = 2")))
        << heads->text().toStdString();
    EXPECT_TRUE(tp->isHidden()) << tp->text().toStdString();

    // A new spec starts without attributions.
    page.setSpec(tinySpec("again"));
    settle(page);
    EXPECT_TRUE(page.formModel()->issuesCausedBy(QStringLiteral("parallel.tp")).empty());
}

// Issue 19: more ranks than cores on this machine drew no word on the field that was changed.
TEST(NewRunPage, MoreRanksThanCoresWarnsOnTheChangedLayout) {
    Page p;
    NewRunPage& page = p.page;
    page.formModel()->setMachine(machineOf(2));
    settle(page);
    EXPECT_TRUE(page.fieldIssueLabel(QStringLiteral("launch.target"))->isHidden());
    typeInto(page.fieldEditor(QStringLiteral("parallel.dp")), QStringLiteral("4"));
    typeInto(page.fieldEditor(QStringLiteral("train.global_batch")), QStringLiteral("16"));
    settle(page);
    QLabel* target = page.fieldIssueLabel(QStringLiteral("launch.target"));
    EXPECT_FALSE(target->isHidden());
    EXPECT_EQ(target->property("severity").toString(), QStringLiteral("warning"));
    EXPECT_TRUE(target->text().contains(QStringLiteral("starts 4 ranks on this machine's 2 cores"))) << target->text().toStdString();
    // dp was the last field of the layout changed before the warning appeared... then the batch:
    // the warning is the layout's, so it is shown beside parallel.dp.
    QLabel* dp = page.fieldIssueLabel(QStringLiteral("parallel.dp"));
    EXPECT_FALSE(dp->isHidden());
    EXPECT_TRUE(dp->text().contains(QStringLiteral("This value affects launch.target"))) << dp->text().toStdString();
    EXPECT_TRUE(page.launchButton()->isEnabled()); // a warning does not block
}

TEST(NewRunPage, AnAbsurdLearningRateWarnsBesideIt) {
    Page p;
    const QString path = QStringLiteral("train.lr");
    typeInto(p.page.fieldEditor(path), QStringLiteral("1e30"));
    settle(p.page);
    const QLabel* lr = p.page.fieldIssueLabel(path);
    EXPECT_EQ(lr->property("severity").toString(), QStringLiteral("warning"));
    EXPECT_TRUE(!lr->isHidden() && lr->text().contains(QStringLiteral("train.lr = 1e+30 is far above any usable rate")))
        << lr->text().toStdString();
}

// Issue 19: picking a preset discarded the form's edits without asking.
TEST(NewRunPage, PickingAPresetAsksBeforeDiscardingEdits) {
    Page p;
    NewRunPage& page = p.page;
    // Nothing changed since the spec was set: no question.
    page.loadPreset(QStringLiteral("quickstart"));
    EXPECT_TRUE(p.asked.isEmpty()) << p.asked.join('\n').toStdString();
    EXPECT_EQ(page.formModel()->spec().name, "quickstart");

    typeInto(page.fieldEditor(QStringLiteral("train.steps")), QStringLiteral("77"));
    ASSERT_TRUE(page.formModel()->isModified());
    // Cancel keeps the edits.
    p.discard = false;
    auto* presets = page.findChild<QComboBox*>();
    ASSERT_NE(presets, nullptr);
    ASSERT_TRUE(presets->placeholderText().startsWith(QStringLiteral("Start from a preset")));
    const int quickstart = presets->findText(QStringLiteral("quickstart"));
    ASSERT_GE(quickstart, 0);
    emit presets->activated(quickstart);
    ASSERT_EQ(p.asked.size(), 1);
    EXPECT_TRUE(p.asked[0].contains(QStringLiteral("quickstart"))) << p.asked[0].toStdString();
    EXPECT_EQ(page.formModel()->spec().train.steps, 77);
    // Discard replaces them.
    p.discard = true;
    emit presets->activated(quickstart);
    EXPECT_EQ(p.asked.size(), 2);
    EXPECT_NE(page.formModel()->spec().train.steps, 77);
    EXPECT_FALSE(page.formModel()->isModified());

    // A launched spec is kept with its run: replacing the form loses nothing.
    typeInto(page.fieldEditor(QStringLiteral("train.steps")), QStringLiteral("78"));
    ASSERT_TRUE(page.formModel()->isModified());
    emit page.launcher()->started(9);
    EXPECT_FALSE(page.formModel()->isModified());

    // An edit undone by hand is no change.
    const int64_t steps = page.formModel()->spec().train.steps;
    typeInto(page.fieldEditor(QStringLiteral("train.steps")), QStringLiteral("5"));
    typeInto(page.fieldEditor(QStringLiteral("train.steps")), QString::number(steps));
    EXPECT_FALSE(page.formModel()->isModified());
}

// Fix and relaunch replaces the form with a failed run's spec: edits are not dropped unasked.
TEST(NewRunPage, FixAndRelaunchAsksBeforeDiscardingEdits) {
    Page p;
    p.page.editRunSpec(tinySpec("failed-one"), 3, QStringLiteral("failed: diverged"));
    EXPECT_TRUE(p.asked.isEmpty()) << "nothing to lose yet";
    typeInto(p.page.fieldEditor(QStringLiteral("train.steps")), QStringLiteral("31"));
    p.discard = false;
    EXPECT_FALSE(p.page.editRunSpec(tinySpec("failed-two"), 4, QStringLiteral("failed: diverged")));
    ASSERT_EQ(p.asked.size(), 1);
    EXPECT_TRUE(p.asked[0].startsWith(QStringLiteral("Fix and relaunch: The spec of run #4 replaces the form.")))
        << p.asked[0].toStdString();
    EXPECT_EQ(p.page.formModel()->spec().train.steps, 31) << "the edits stay";
    EXPECT_EQ(p.page.editedRun(), 3);
    p.discard = true;
    EXPECT_TRUE(p.page.editRunSpec(tinySpec("failed-two"), 4, QStringLiteral("failed: diverged")));
    EXPECT_EQ(p.page.formModel()->spec().name, "failed-two");
    EXPECT_EQ(p.page.editedRun(), 4);
}

// Resume with changes: the spec of a run, edited, continues that run from its checkpoint. The form
// says what differs from the run's spec as it is edited, refuses another model, and Launch becomes
// Resume (parallax-cli run SPEC --from RUN).
TEST(NewRunPage, ResumeWithChangesSaysWhatDiffersAndContinuesTheRun) {
    Page p;
    NewRunPage& page = p.page;
    QLabel* message = page.messageLabel();
    ASSERT_TRUE(page.resumeRunSpec(tinySpec("elastic"), 5));
    EXPECT_EQ(page.resumedRun(), 5);
    settle(page);
    EXPECT_EQ(page.launchButton()->text(), QStringLiteral("Resume #5"));
    EXPECT_TRUE(page.launchButton()->isEnabled()) << page.launchButton()->toolTip().toStdString();
    EXPECT_TRUE(message->text().startsWith(QStringLiteral("Resuming run #5 from its last checkpoint with its own spec")))
        << message->text().toStdString();

    typeInto(page.fieldEditor(QStringLiteral("parallel.dp")), QStringLiteral("1"));
    settle(page);
    EXPECT_EQ(message->text(), QStringLiteral("Resuming run #5 from its last checkpoint with: parallel.dp: 2 → 1"));
    EXPECT_TRUE(page.launchButton()->isEnabled());

    // Another global batch trains other numbers: said, not refused. Another model is refused.
    typeInto(page.fieldEditor(QStringLiteral("train.global_batch")), QStringLiteral("16"));
    settle(page);
    EXPECT_TRUE(message->text().contains(QStringLiteral("Warning: train.global_batch = 16 where run 5 had 8")))
        << message->text().toStdString();
    EXPECT_TRUE(page.launchButton()->isEnabled());
    typeInto(page.fieldEditor(QStringLiteral("model.layers")), QStringLiteral("6"));
    settle(page);
    EXPECT_TRUE(message->text().contains(QStringLiteral("Error: model.layers = 6, but the checkpoint of run 5")))
        << message->text().toStdString();
    EXPECT_FALSE(page.launchButton()->isEnabled());
    EXPECT_TRUE(page.launchButton()->toolTip().contains(QStringLiteral("cannot be loaded into this spec")));

    // What Launch runs.
    EXPECT_EQ(page.launcher()->continueArguments(QStringLiteral("/s/e.toml"), 5),
              (QStringList{QStringLiteral("--store"), p.dir.filePath(QStringLiteral("parallax.db")), QStringLiteral("run"),
                           QStringLiteral("/s/e.toml"), QStringLiteral("--from"), QStringLiteral("5"),
                           QStringLiteral("--detach")}));
    // Once the continuation started, the form launches new runs again.
    emit page.launcher()->started(9);
    EXPECT_TRUE(message->text().startsWith(QStringLiteral("Run #9 continues run #5"))) << message->text().toStdString();
    EXPECT_EQ(page.resumedRun(), 0);
    EXPECT_EQ(page.launchButton()->text(), QStringLiteral("Launch"));
}

TEST(NewRunPage, AModelPresetAsksBeforeDroppingDimensionsSetByHand) {
    Page p;
    NewRunPage& page = p.page;
    // No dimension set by hand: a preset changes nothing typed, and asks nothing.
    pickModelPreset(page, QStringLiteral("small"));
    EXPECT_TRUE(p.asked.isEmpty());
    EXPECT_EQ(page.formModel()->spec().model.preset, "small");

    typeInto(page.fieldEditor(QStringLiteral("model.heads")), QStringLiteral("2"));
    p.discard = false;
    pickModelPreset(page, QStringLiteral("tiny"));
    ASSERT_EQ(p.asked.size(), 1);
    EXPECT_TRUE(p.asked[0].contains(QStringLiteral("model.heads"))) << p.asked[0].toStdString();
    EXPECT_EQ(page.formModel()->spec().model.preset, "small");
    EXPECT_EQ(page.formModel()->spec().model.heads, std::optional<int64_t>(2));
    EXPECT_EQ(modelPresetCombo(page)->currentData().toString(), QStringLiteral("small")); // the combo goes back
    // "custom" keeps every dimension: nothing to ask.
    pickModelPreset(page, QStringLiteral("custom"));
    EXPECT_EQ(p.asked.size(), 1);
    EXPECT_EQ(page.formModel()->spec().model.heads, std::optional<int64_t>(2));
}

// A Launch writes the spec for parallax-cli beside the store and removes it once the CLI has
// answered (the run keeps its own copy): launches leave no files behind, a failed one neither.
TEST(NewRunPage, ALaunchLeavesNoSpecFileBehind) {
    Page p;
    NewRunPage& page = p.page;
    QTemporaryDir cli;
    page.launcher()->setCliPath(fakeCli(cli, "run 9 (form) in /runs/9\\n", 0));
    QSignalSpy started(page.launcher(), &RunLauncher::started);
    page.launch();
    ASSERT_TRUE(waitFor([&] { return started.count() == 1; })) << page.messageLabel()->text().toStdString();
    QFile args(cli.filePath(QStringLiteral("args")));
    ASSERT_TRUE(args.open(QIODevice::ReadOnly));
    const QStringList words = QString::fromUtf8(args.readAll()).split(QChar('\n'), Qt::SkipEmptyParts);
    const qsizetype run = words.indexOf(QStringLiteral("run"));
    ASSERT_GE(run, 0) << words.join(QChar(' ')).toStdString();
    const QString spec = words.value(run + 1);
    EXPECT_TRUE(spec.startsWith(p.dir.filePath(QStringLiteral("specs/")))) << spec.toStdString();
    EXPECT_FALSE(QFileInfo::exists(spec)) << "the launch spec was left behind";

    page.launcher()->setCliPath(fakeCli(cli, "", 2));
    QSignalSpy failed(page.launcher(), &RunLauncher::failed);
    page.launch();
    ASSERT_TRUE(waitFor([&] { return failed.count() == 1; }));
    EXPECT_TRUE(QDir(p.dir.filePath(QStringLiteral("specs"))).entryList(QDir::Files).isEmpty());
}

// Issue 19: status messages stayed after what they said had changed.
TEST(NewRunPage, MessagesGoWhenWhatTheySayNoLongerHolds) {
    Page p;
    NewRunPage& page = p.page;
    QLabel* message = page.messageLabel();

    // "Saved ..." goes with the next edit.
    QString error;
    ASSERT_TRUE(page.saveSpecFile(p.dir.filePath(QStringLiteral("s.toml")), &error)) << error.toStdString();
    EXPECT_TRUE(message->text().startsWith(QStringLiteral("Saved"))) << message->text().toStdString();
    typeInto(page.fieldEditor(QStringLiteral("train.steps")), QStringLiteral("21"));
    EXPECT_TRUE(message->text().isEmpty()) << message->text().toStdString();

    // The errors a launch refused goes once they are fixed.
    typeInto(page.fieldEditor(QStringLiteral("parallel.tp")), QStringLiteral("3"));
    page.launch();
    EXPECT_TRUE(message->text().contains(QStringLiteral("The spec has errors"))) << message->text().toStdString();
    typeInto(page.fieldEditor(QStringLiteral("train.seed")), QStringLiteral("7"));
    settle(page);
    EXPECT_TRUE(message->text().contains(QStringLiteral("The spec has errors"))) << "still has errors";
    typeInto(page.fieldEditor(QStringLiteral("parallel.tp")), QStringLiteral("1"));
    settle(page);
    EXPECT_TRUE(message->text().isEmpty()) << message->text().toStdString();

    // "Run #N started" follows that run: it says how the run ended, and goes with the next edit.
    RunListModel runs;
    runs.setRuns({runRecord(7, RunState::Running, 2)});
    page.setRunList(&runs);
    emit page.launcher()->started(7);
    EXPECT_TRUE(message->text().startsWith(QStringLiteral("Run #7 started"))) << message->text().toStdString();
    runs.setRuns({runRecord(7, RunState::Running, 5)});
    EXPECT_TRUE(message->text().startsWith(QStringLiteral("Run #7 started"))) << message->text().toStdString();
    runs.setRuns({runRecord(7, RunState::Failed, 5, "rank 1 exited with code 1")});
    EXPECT_EQ(message->text(), QStringLiteral("Run #7 form failed after 6 / 20 steps: rank 1 exited with code 1"));
    typeInto(page.fieldEditor(QStringLiteral("train.steps")), QStringLiteral("22"));
    EXPECT_TRUE(message->text().isEmpty()) << message->text().toStdString();

    // A run that ended before its message was read is told at once.
    runs.setRuns({runRecord(8, RunState::Succeeded, 19), runRecord(7, RunState::Failed, 5)});
    emit page.launcher()->started(8);
    EXPECT_EQ(message->text(), QStringLiteral("Run #8 form succeeded: 20 / 20 steps."));

    // The spec of an earlier run being edited stays said while the form changes.
    page.editRunSpec(tinySpec("again"), 7, QStringLiteral("failed: rank 1 exited"));
    typeInto(page.fieldEditor(QStringLiteral("train.steps")), QStringLiteral("23"));
    EXPECT_TRUE(message->text().startsWith(QStringLiteral("Editing the spec of run #7"))) << message->text().toStdString();
}
