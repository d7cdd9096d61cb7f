#pragma once

#include "core/spec/RunSpec.h"
#include "core/spec/SpecFields.h"
#include "ui/models/ClusterProfileListModel.h"

#include <QMap>
#include <QPointer>
#include <QString>
#include <QStringList>
#include <QVector>
#include <QWidget>

#include <array>
#include <functional>
#include <map>
#include <string>
#include <vector>

class QComboBox;
class QFormLayout;
class QGridLayout;
class QLayout;
class QLabel;
class QListWidget;
class QPushButton;
class QScrollArea;
class QShowEvent;
class QSplitter;
class WrappingLabel;
class QToolButton;
class QVBoxLayout;

class QPainter;
class QColor;

namespace parallax {

class EstimatePanel;
class AdviseRunner;
class BalanceRunner;
class FitRunner;
class LayoutAdviceModel;
class ProbeCommand;
class RunLauncher;
class RunListModel;
class SpecFormModel;

// The New run form: a spec, field by field (model, data, training, parallel layout, target), with
// the validator's findings beside the fields they concern and live estimates of what the layout
// costs. Launch writes the spec to a file and starts `parallax-cli run --detach`; the new run's id
// comes back through runLaunched().
class NewRunPage : public QWidget {
    Q_OBJECT
public:
    // Its icon in the navigation (a play triangle in a circle), on PageIcons' 24 x 24 grid with the pen set.
    static void paintIcon(QPainter& p, const QColor& color);
    explicit NewRunPage(QWidget* parent = nullptr);

    SpecFormModel* formModel() const { return m_model; }
    RunLauncher* launcher() const { return m_launcher; }
    EstimatePanel* estimatePanel() const { return m_estimates; }
    QSplitter* splitter() const { return m_splitter; }

    void setStorePath(const QString& path);
    QString storePath() const { return m_storePath; }
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
    qint64 editedRun() const { return m_editedRun; }
    // The spec of run `fromRun`, to change (another layout, hosts or devices) and continue that run
    // from its checkpoint with: Launch becomes "Resume #N" (parallax-cli run SPEC --from N), and
    // what differs from the run's spec is listed above the form as it is edited, with what the
    // checkpoint refuses (another model) as errors. False, changing nothing, as editRunSpec.
    bool resumeRunSpec(const RunSpec& spec, qint64 fromRun);
    qint64 resumedRun() const { return m_resumedRun; }
    QString resumeDifferences() const;
    // SpecError text in `error` when the file cannot be read; unknown keys are kept and reported.
    bool loadSpecFile(const QString& path, QString* error = nullptr);
    bool saveSpecFile(const QString& path, QString* error = nullptr);
    QString sourcePath() const { return m_sourcePath; }

    // The editor of a spec field ("parallel.tp") and the label showing its issues; null when the
    // form has no editor for the field.
    QWidget* fieldEditor(const QString& path) const;
    QLabel* fieldIssueLabel(const QString& path) const;
    // The label of the field's row, shown or not; null for a path the form has no row for.
    QLabel* fieldLabel(const QString& path) const;
    QPushButton* launchButton() const { return m_launch; }
    // "Find the largest micro-batch": parallax-cli fit on the spec as the form has it; its answer for
    // the spec's activation checkpointing goes into the form with "Use".
    FitRunner* fitRunner() const { return m_fit; }
    QPushButton* fitButton() const { return m_fitRow.button; }
    QPushButton* fitUseButton() const { return m_fitRow.use; }
    QLabel* fitStatusLabel() const { return m_fitRow.status; }
    // "Balance the stages by measured time": parallax-cli balance on the spec as the form has it; each
    // stage's time on the spec's split and on the balanced one, which "Use" puts in the form
    // (parallel.stage_layers, stage_split = "profile"). Shown for a pipeline (pp > 1).
    BalanceRunner* balanceRunner() const { return m_balance; }
    QPushButton* balanceButton() const { return m_balanceRow.button; }
    QPushButton* balanceUseButton() const { return m_balanceRow.use; }
    QLabel* balanceStatusLabel() const { return m_balanceRow.status; }
    // "Try the top 3 layouts": parallax-cli advise on the spec's devices; "Use" sets the fastest
    // measured layout.
    AdviseRunner* adviseRunner() const { return m_advise; }
    LayoutAdviceModel* adviceModel() const { return m_adviceModel; }
    QPushButton* adviceButton() const { return m_adviceRow.button; }
    QPushButton* adviceUseButton() const { return m_adviceRow.use; }
    QLabel* adviceStatusLabel() const { return m_adviceRow.status; }
    QLabel* messageLabel() const { return m_message; }
    QString microBatchesText() const;

    // Preset specs by name (quickstart first): resources/runs/*.toml found from the executable
    // (the source tree above a build folder, or <prefix>/share/parallax/runs), else the copies
    // compiled into the console.
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
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    struct Field {
        QWidget* editor = nullptr;
        WrappingLabel* issue = nullptr;
        QWidget* row = nullptr; // the editor with its issue label, as placed in the form
        std::function<void()> refresh;
    };

    QWidget* buildForm();
    void reflowForm();
    // A group of the form: an editor for every field of `section` the field table offers
    // (specFields(): label, help, range, options), chosen by the field's type.
    QWidget* buildSection(const char* section, const QString& title);
    void addField(QFormLayout* form, const SpecField& field);
    void addModelPreset(QFormLayout* form, const QString& label, const QString& path, const FieldInfo& info);
    void addDataPath(QFormLayout* form, const QString& label, const QString& path, const FieldInfo& info);
    void addClusterChoice(QFormLayout* form, const QString& label, const QString& path, const FieldInfo& info);
    void addDeviceMemoryRow(QFormLayout* form);
    void addDerivedRows(QFormLayout* form);
    // A probe command's row: its button, "Use" (hidden until there is an answer), a status line.
    struct ProbeRow {
        QWidget* widget = nullptr;
        QVBoxLayout* layout = nullptr;
        QPushButton* button = nullptr;
        QPushButton* use = nullptr;
        QLabel* status = nullptr;
    };
    ProbeRow probeRow(const QString& action, const QString& tip);
    // The command's progress and failure shown in the row's status line; on failure its button says
    // `action` again.
    void followProbe(ProbeCommand* command, const ProbeRow& row, const QString& action);
    // Stops the command if it runs (true), saying so in `status`.
    bool stopProbe(ProbeCommand* command, QLabel* status);
    // The row while its command runs: its button says `stop`, its status line `status`, no "Use".
    void showProbeStarted(const ProbeRow& row, const QString& stop, const QString& status);
    void addFitRow(QFormLayout* form);
    void addAdviceRow(QFormLayout* form);
    void startOrStopAdvice();
    void addBalanceRow(QFormLayout* form);
    void startOrStopBalance();
    void showBalanceResult();
    // A spec file of the form as it is, for a probe command; empty (the reason shown in `status`)
    // when the spec has errors or cannot be written.
    QString probeSpecFile(QLabel* status);
    void startOrStopFit();
    void showFitResult();

    // Field editors bound to spec paths; each is added to `form` with its issue label.
    QWidget* wrap(const QString& path, QWidget* editor, const std::function<void()>& refresh);
    void addRow(QFormLayout* form, const QString& label, const QString& path, QWidget* editor,
                const std::function<void()>& refresh, const QString& tip = {});
    void addInt(QFormLayout* form, const QString& label, const QString& path, const FieldInfo& info);
    void addOptionalInt(QFormLayout* form, const QString& label, const QString& path, const FieldInfo& info);
    void addDimension(QFormLayout* form, const QString& label, const QString& path, const FieldInfo& info);
    void addChoice(QFormLayout* form, const QString& label, const QString& path,
                   const QList<QPair<QVariant, QString>>& items, const QString& tip = {});
    void addNumber(QFormLayout* form, const QString& label, const QString& path, const FieldInfo& info);
    void addBool(QFormLayout* form, const QString& label, const QString& path, const FieldInfo& info);
    void addText(QFormLayout* form, const QString& label, const QString& path, const FieldInfo& info);
    void addLines(QFormLayout* form, const QString& label, const QString& path, const FieldInfo& info);

    void setRowVisible(const QString& path, bool visible);
    void refreshFields();
    void refreshVisibility();
    void refreshDerived();
    void showIssues();
    void updateLaunchButton();
    // What a message is about decides when it goes: a note (loaded, saved, copied, a launch that
    // failed) with the next edit, the spec's errors once they are fixed, a launch's progress when
    // its run ends, the context of an earlier run's spec when the spec is launched or replaced.
    enum class MessageKind { None, Note, SpecErrors, Launch, Context };
    void showMessage(const QString& text, bool error, MessageKind kind = MessageKind::Note);
    void clearMessage();
    void followLaunchedRun();
    bool confirmDiscard(const QString& title, const QString& what);
    void fillPresetCombo();
    void browseDataPath();
    void refreshClusterChoice();

    void showResumeDifferences();

    SpecFormModel* m_model;
    qint64 m_resumedRun = 0;         // Launch continues this run (resumeRunSpec)
    RunSpec m_resumedSpec;           // its spec, to say what differs
    RunLauncher* m_launcher;
    QString m_storePath;
    QString m_sourcePath;
    qint64 m_editedRun = 0;
    MessageKind m_messageKind = MessageKind::None;
    qint64 m_messageRun = 0; // the run a Launch message is about (0: still starting)
    QPointer<RunListModel> m_runs;
    ConfirmDiscard m_confirmDiscard;
    std::map<QString, Field> m_fields;
    std::map<QString, QFormLayout*> m_rowForms;
    // Each form's rows in the order they were built (their field widgets), and the labels of rows
    // taken out of their form while hidden (setRowVisible).
    std::map<QFormLayout*, std::vector<QWidget*>> m_formRowOrder;
    std::map<QWidget*, QWidget*> m_takenLabels;

    QScrollArea* m_scroll = nullptr;
    QGridLayout* m_formGrid = nullptr;
    QPointer<QWidget> m_formViewport; // the form's scroll viewport, whose width decides the columns
    std::array<QLayout*, 2> m_formColumns{};
    QSplitter* m_splitter = nullptr;
    EstimatePanel* m_estimates = nullptr;
    QComboBox* m_presets = nullptr;
    QComboBox* m_modelPreset = nullptr;
    QComboBox* m_cluster = nullptr;
    std::vector<ClusterProfileListModel::Entry> m_clusterProfiles;
    QPushButton* m_resetDims = nullptr;
    QLabel* m_microBatches = nullptr;
    QLabel* m_world = nullptr;
    QListWidget* m_issues = nullptr;
    QLabel* m_issueSummary = nullptr;
    QLabel* m_message = nullptr;
    QToolButton* m_copy = nullptr;
    QPushButton* m_launch = nullptr;
    FitRunner* m_fit = nullptr;
    ProbeRow m_fitRow;
    AdviseRunner* m_advise = nullptr;
    LayoutAdviceModel* m_adviceModel = nullptr;
    ProbeRow m_adviceRow;
    QWidget* m_adviceView = nullptr;
    BalanceRunner* m_balance = nullptr;
    ProbeRow m_balanceRow;
    // The balance probe's answer and the spec it was found for (balanceKey in the .cpp).
    struct BalanceAnswer {
        QVector<qint64> layersBefore, layers;
        QVector<double> msBefore, ms;
        std::string key;
        bool known = false;
    } m_balanceAnswer;
    std::string m_balanceStartedKey;
    struct FitAnswer {
        qint64 largest = 0;
        qint64 largestWithCheckpointing = 0;
        double peak = 0;
        double peakWithCheckpointing = 0;
        bool known = false;
    } m_fitAnswer;
};

} // namespace parallax
