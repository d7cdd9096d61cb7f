#pragma once

#include "core/spec/Estimates.h"
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

    const RunSpec& spec() const { return m_spec; }
    // Replaces the whole spec (a loaded file, a preset); clears input errors.
    void setSpec(const RunSpec& spec);
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

    RunSpec m_spec;
    std::map<QString, QString> m_inputErrors;
    std::vector<SpecIssue> m_issues;
    std::optional<Estimates> m_estimates;
    QString m_estimateError;
    double m_cudaMemoryGiB = kDefaultCudaMemoryGiB;
    QTimer m_debounce;
};

} // namespace parallax
