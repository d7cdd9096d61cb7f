#pragma once

#include "core/spec/RunSpec.h"

#include <QObject>
#include <QString>

#include <optional>

namespace parallax {

class SpecFormModel;

// The spec behind the New run form as a document: the file it was read from or saved to, the
// earlier run it is a changed copy of (launched as a new run) or continues (launched as that run's
// continuation from its checkpoint), and the files a launch writes into the store's folder. The
// fields themselves are the SpecFormModel's. No widget: tested without a window.
class SpecDocument : public QObject {
    Q_OBJECT
public:
    explicit SpecDocument(SpecFormModel* model, QObject* parent = nullptr);

    SpecFormModel* model() const { return m_model; }
    void setStorePath(const QString& path) { m_storePath = path; }
    QString storePath() const { return m_storePath; }

    // Replaces the spec; `sourcePath` is the file it came from ("" for none). The run it was
    // edited from or resumes is forgotten.
    void setSpec(const RunSpec& spec, const QString& sourcePath = {});
    QString sourcePath() const { return m_sourcePath; }
    // The spec of run `fromRun`, to change and launch as a new run.
    void editRun(const RunSpec& spec, qint64 fromRun);
    qint64 editedRun() const { return m_editedRun; }
    // The spec of run `fromRun`, to change and continue that run from its checkpoint with.
    void resumeRun(const RunSpec& spec, qint64 fromRun);
    qint64 resumedRun() const { return m_resumedRun; }
    // While resuming: what differs from the run's spec, then what its checkpoint refuses or warns
    // about; "" otherwise.
    QString resumeDifferences() const;
    // While resuming: whether the checkpoint refuses the spec as it is.
    bool resumeRefused() const;
    // While resuming, why Launch cannot continue the run ("" when it can).
    QString resumeBlocker() const;
    // The spec started a run and is kept with it: nothing is unsaved, and the run it was edited
    // from or resumes is done with.
    void markLaunched();

    // A spec file read for the form: the spec, or none and the error (SpecError text); the note
    // says what was loaded and which keys this version does not know but keeps.
    struct Read {
        std::optional<RunSpec> spec;
        QString message;
    };
    static Read read(const QString& path);
    // Writes the spec to `path`, which becomes its source. The message says what was saved, or why not.
    bool save(const QString& path, QString* message);
    // The spec has no file of its own (a preset is a starting point: saving must not overwrite it).
    void forgetSource();

    // Writes the spec where Launch and "Copy launch command" read it:
    // <store folder>/specs/<name>-<time>.toml. Empty, with the reason in `error`, when it cannot.
    QString writeLaunchSpec(QString* error) const;
    // The launcher command (mpirun/srun) for the spec at `specPath`, as a line for a shell.
    QString launchCommandLine(const QString& specPath, QString* error) const;

signals:
    // The spec's file changed (a load, a save, a spec replaced); "" for none.
    void sourcePathChanged(const QString& path);

private:
    SpecFormModel* m_model;
    QString m_storePath;
    QString m_sourcePath;
    qint64 m_editedRun = 0;
    qint64 m_resumedRun = 0; // Launch continues this run
    RunSpec m_resumedSpec;   // its spec, to say what differs
};

} // namespace parallax
