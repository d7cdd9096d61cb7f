#pragma once

#include "core/spec/RunSpec.h"

#include <QMap>
#include <QPointer>
#include <QString>
#include <QStringList>
#include <QWidget>

#include <functional>

class QComboBox;
class QLabel;
class QLayout;
class QPushButton;
class QScrollArea;
class QShowEvent;
class QSplitter;
class QToolButton;

class QPainter;
class QColor;

namespace parallax {

class EstimatePanel;
class AdviseRunner;
class DatasetCacheRow;
class FinetuneRows;
class BalanceRunner;
class FitRunner;
class LayoutAdviceModel;
class ProbeRows;
class RunLauncher;
class RunListModel;
class SpecDocument;
class SpecForm;
class SpecFormModel;
class SpecIssuesPanel;

// The New run form: a spec, field by field (model, data, training, parallel layout, target), with
// the validator's findings beside the fields they concern and live estimates of what the layout
// costs. Launch writes the spec to a file and starts `parallax-cli run --detach`; the new run's id
// comes back through runLaunched(). The page composes its parts: the fields (SpecForm), the probe
// rows (ProbeRows), the estimates (EstimatePanel), the list of issues (SpecIssuesPanel), over the
// spec as a document (SpecDocument) launched by RunLauncher; it keeps the messages and the actions.
class NewRunPage : public QWidget {
    Q_OBJECT
public:
    // Its icon in the navigation (a play triangle in a circle), on PageIcons' 24 x 24 grid with the pen set.
    static void paintIcon(QPainter& p, const QColor& color);
    explicit NewRunPage(QWidget* parent = nullptr);

    SpecFormModel* formModel() const { return m_model; }
    SpecDocument* document() const { return m_document; }
    RunLauncher* launcher() const { return m_launcher; }
    EstimatePanel* estimatePanel() const { return m_estimates; }
    QSplitter* splitter() const { return m_splitter; }

    void setStorePath(const QString& path);
    QString storePath() const;
    // The store's runs, so that the message about a run launched from here follows its state
    // ("Run #12 started" becomes "Run #12 failed after 3 / 20 steps: ..." when it ends).
    void setRunList(RunListModel* runs);

    // Asked before the form's unsaved changes are replaced (a preset, a spec file, a model preset
    // that drops dimensions set by hand); answers whether to discard them. Unless set, a message
    // box with Discard and Cancel asks.
    using ConfirmDiscard = std::function<bool(const QString& title, const QString& text)>;
    void setConfirmDiscard(ConfirmDiscard confirm) { m_confirmDiscard = std::move(confirm); }

    void setSpec(const RunSpec& spec, const QString& sourcePath = {});
    // The spec of an earlier run, to change and launch again as a new run; `why` is how that run
    // ended (its state and reason), shown above the form until the spec is launched or replaced.
    // Returns false, changing nothing, when the form has edits and the person keeps them.
    bool editRunSpec(const RunSpec& spec, qint64 fromRun, const QString& why);
    qint64 editedRun() const;
    // The spec of run `fromRun`, to change (another layout, hosts or devices) and continue that run
    // from its checkpoint with: Launch becomes "Resume #N" (parallax-cli run SPEC --from N), and
    // what differs from the run's spec is listed above the form as it is edited, with what the
    // checkpoint refuses (another model) as errors. False, changing nothing, as editRunSpec.
    bool resumeRunSpec(const RunSpec& spec, qint64 fromRun);
    qint64 resumedRun() const;
    QString resumeDifferences() const;
    // SpecError text in `error` when the file cannot be read; unknown keys are kept and reported.
    bool loadSpecFile(const QString& path, QString* error = nullptr);
    bool saveSpecFile(const QString& path, QString* error = nullptr);
    QString sourcePath() const;

    // The editor of a spec field ("parallel.tp") and the label showing its issues; null when the
    // form has no editor for the field.
    QWidget* fieldEditor(const QString& path) const;
    QLabel* fieldIssueLabel(const QString& path) const;
    // The label of the field's row, shown or not; null for a path the form has no row for.
    QLabel* fieldLabel(const QString& path) const;
    QPushButton* launchButton() const { return m_launch; }
    // "Find the largest micro-batch": parallax-cli fit on the spec as the form has it; its answer for
    // the spec's activation checkpointing goes into the form with "Use".
    FitRunner* fitRunner() const;
    QPushButton* fitButton() const;
    QPushButton* fitUseButton() const;
    QLabel* fitStatusLabel() const;
    // "Balance the stages by measured time": parallax-cli balance on the spec as the form has it; each
    // stage's time on the spec's split and on the balanced one, which "Use" puts in the form
    // (parallel.stage_layers, stage_split = "profile"). Shown for a pipeline (pp > 1).
    BalanceRunner* balanceRunner() const;
    QPushButton* balanceButton() const;
    QPushButton* balanceUseButton() const;
    QLabel* balanceStatusLabel() const;
    // "Try the top 3 layouts": parallax-cli advise on the spec's devices; "Use" sets the fastest
    // measured layout.
    AdviseRunner* adviseRunner() const;
    LayoutAdviceModel* adviceModel() const;
    QPushButton* adviceButton() const;
    QPushButton* adviceUseButton() const;
    QLabel* adviceStatusLabel() const;
    // The dataset's buckets and latent cache, with "Cache now", for a latent model on image-caption data.
    DatasetCacheRow* datasetCacheRow() const { return m_datasetCache; }
    FinetuneRows* finetuneRows() const { return m_finetune; }
    QLabel* messageLabel() const { return m_message; }
    QString microBatchesText() const;

    // Preset specs by name (quickstart first): resources/runs/*.toml found from the executable
    // (the source tree above a build folder, or <prefix>/share/parallax/runs), else the copies
    // compiled into the console (SpecPresets).
    static QMap<QString, QString> presetFiles();
    static QStringList presetDirectories();

    // Where Launch and "Copy launch command" write the spec: <store folder>/specs/<name>-<time>.toml.
    QString writeLaunchSpec(QString* error) const;
    // The launcher command (mpirun/srun) for the spec at `specPath`, as a line for a shell.
    QString launchCommandLine(const QString& specPath, QString* error) const;

public slots:
    void openSpecDialog();
    void saveSpecDialog();
    void launch();
    void copyLaunchCommand();
    void copyCliCommand();
    void loadPreset(const QString& name);
    // Reads the cluster profile folders again for the Cluster choice (launch.cluster).
    void reloadClusterProfiles();

signals:
    void runLaunched(qint64 runId);
    void statusMessage(const QString& message);
    void specFileChanged(const QString& path);

protected:
    void showEvent(QShowEvent* event) override;

private:
    QLayout* buildTopBar();
    QWidget* buildPanes();
    QLayout* buildActions();
    void connectModel();
    void connectLauncher();

    void showIssues();
    void updateLaunchButton();
    // What a message is about decides when it goes: a note (loaded, saved, copied, a launch that
    // failed) with the next edit, the spec's errors once they are fixed, a launch's progress when
    // its run ends, the context of an earlier run's spec when the spec is launched or replaced.
    enum class MessageKind { None, Note, SpecErrors, Launch, Context };
    void showMessage(const QString& text, bool error, MessageKind kind = MessageKind::Note);
    void clearMessage();
    void followLaunchedRun();
    void showResumeDifferences();
    bool confirmDiscard(const QString& title, const QString& what);
    void fillPresetCombo();

    SpecFormModel* m_model;
    SpecDocument* m_document;
    RunLauncher* m_launcher;
    ProbeRows* m_probes;
    DatasetCacheRow* m_datasetCache;
    FinetuneRows* m_finetune;
    SpecForm* m_form = nullptr;
    MessageKind m_messageKind = MessageKind::None;
    qint64 m_messageRun = 0; // the run a Launch message is about (0: still starting)
    // The spec file a Launch handed to parallax-cli: removed once it answers (the run keeps its own
    // copy in its folder and the store), so launches leave no file behind.
    QString m_launchSpec;
    QPointer<RunListModel> m_runs;
    ConfirmDiscard m_confirmDiscard;

    QScrollArea* m_scroll = nullptr;
    QSplitter* m_splitter = nullptr;
    EstimatePanel* m_estimates = nullptr;
    SpecIssuesPanel* m_issues = nullptr;
    QComboBox* m_presets = nullptr;
    QLabel* m_message = nullptr;
    QToolButton* m_copy = nullptr;
    QPushButton* m_launch = nullptr;
};

} // namespace parallax
