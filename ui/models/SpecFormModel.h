#pragma once

#include "core/spec/Estimates.h"
#include "core/spec/MachineInfo.h"
#include "core/spec/RunSpec.h"
#include "core/spec/SpecValidator.h"

#include <QObject>
#include <QString>
#include <QTimer>
#include <QVariant>

#include <functional>
#include <map>
#include <optional>
#include <vector>

namespace parallax {

// The spec behind the New run form. Widgets edit it field by field (paths as in the TOML file,
// "parallel.tp"); every edit re-runs the validator and the estimates after a short quiet period, so
// that typing a number does not validate each keystroke. Text a widget could not parse (a learning
// rate of "3e-") is an input error of its field and blocks a launch like a validator error.
class SpecFormModel : public QObject {
    Q_OBJECT
public:
    static constexpr int kDebounceMs = 100;
    static constexpr double kDefaultCudaMemoryGiB = 141.0; // one H200

    explicit SpecFormModel(QObject* parent = nullptr);

    // A spec file as read from disk (or from the presets compiled in, ":/runs/...").
    struct SpecFile {
        std::optional<RunSpec> spec; // none: it could not be read (error says why)
        // "bad.toml:2: train.steps must be an integer, got \"ten\"": the file, and the line where
        // known; or the path and why it cannot be opened.
        QString error;
        // Keys this version does not know, kept in the spec all the same, one warning each.
        std::vector<SpecIssue> unknown;
    };
    // Reads and parses `path`; the form is not changed (setSpec does that).
    static SpecFile readFile(const QString& path);

    const RunSpec& spec() const { return m_spec; }
    // Replaces the whole spec (a loaded file, a preset); clears input errors. The spec becomes the
    // one edits are measured against (isModified).
    void setSpec(const RunSpec& spec);
    // The spec as last set with setSpec, before any edit.
    const RunSpec& loadedSpec() const { return m_loaded; }
    // Whether edits changed the spec since setSpec or markSaved (an edit undone by hand is no change).
    bool isModified() const;
    // The spec as it is now was written to a file: edits are measured from it.
    void markSaved() { m_loaded = m_spec; }
    // Applies `change` to the spec; `path` names the field changed, for specEdited().
    void edit(const QString& path, const std::function<void(RunSpec&)>& change);

    // The value of a known field: QString, bool, qlonglong, qulonglong, double, QStringList, or an
    // invalid QVariant for an unset optional. Unknown paths give an invalid QVariant.
    QVariant field(const QString& path) const;
    // Sets a known field from a value of the matching type (an invalid QVariant unsets an optional,
    // numbers convert between integer and floating types). Returns false for an unknown path or a
    // value that does not convert; the spec is unchanged then.
    bool setField(const QString& path, const QVariant& value);

    // An input error of `path` (empty message: none).
    void setInputError(const QString& path, const QString& message);
    QString inputError(const QString& path) const;

    // Validator issues and input errors, as of the last validation.
    const std::vector<SpecIssue>& issues() const { return m_issues; }
    std::vector<SpecIssue> issuesFor(const QString& path) const;
    // Issues of other fields that an edit of `path` brought about: the field a person changed was
    // among the issue's related fields when the issue appeared or its message changed ("model.heads
    // = 6 is not divisible by parallel.tp = 4" after parallel.tp was set to 4). The attribution lasts
    // while the issue does, and ends with setSpec.
    std::vector<SpecIssue> issuesCausedBy(const QString& path) const;
    // The edited field issue `index` of issues() is attributed to ("" when none).
    QString causeOf(size_t index) const;
    bool hasErrors() const;
    // Estimates of the last validation; empty when the model could not be resolved (estimateError).
    const std::optional<Estimates>& estimates() const { return m_estimates; }
    QString estimateError() const { return m_estimateError; }
    // Memory one device offers: cuda the device-memory setting, cpu this machine's RAM divided by
    // the ranks that share a node.
    double deviceCapacityBytes() const;
    double cudaMemoryGiB() const { return m_cudaMemoryGiB; }
    void setCudaMemoryGiB(double gib);
    // Ranks of the layout that run on one node (local: all of them).
    int64_t ranksPerNode() const;
    // The machine a local run is checked against (cores, memory): thisMachine() unless set.
    const MachineInfo& machine() const { return m_machine; }
    void setMachine(const MachineInfo& machine);

    // Validates at once instead of after the quiet period.
    void validateNow();
    bool validationPending() const { return m_debounce.isActive(); }

    static double physicalMemoryBytes();

signals:
    void specReset();
    void specEdited(const QString& path);
    // Issues, estimates and capacity are current.
    void validated();

private:
    void scheduleValidation();
    void noteEdit(const QString& path);

    RunSpec m_spec;
    RunSpec m_loaded;
    MachineInfo m_machine;
    // Fields edited since the last validation, oldest first.
    std::vector<std::string> m_edited;
    // The cause of each issue in m_issues, by position.
    std::vector<std::string> m_causes;
    std::map<QString, QString> m_inputErrors;
    std::vector<SpecIssue> m_issues;
    std::optional<Estimates> m_estimates;
    QString m_estimateError;
    double m_cudaMemoryGiB = kDefaultCudaMemoryGiB;
    QTimer m_debounce;
};

} // namespace parallax
