#pragma once

#include "ui/models/ProbeCommand.h"

#include <QString>
#include <QStringList>

namespace parallax {

// The Runs page's Export…: runs `parallax-cli --store S export RUN -o FOLDER [--merge]`, which
// writes the run's latest checkpoint as a Hugging Face folder (a diffusers transformer folder for
// qwen_image), a LoRA run merged into its base model with --merge, or a LoRA run's adapter alone
// without it (PEFT, and the diffusers and ComfyUI files for qwen_image). Its lines ("checkpoint
// ... (step 20)", "merged 14 LoRA adapters ...") come as progress; stopped as every ProbeCommand.
class ModelExportRunner : public ProbeCommand {
    Q_OBJECT
public:
    enum class Content {
        Merged,     // the whole model: full weights, LoRA adapters merged in
        AdapterOnly // a LoRA run's adapter alone
    };

    explicit ModelExportRunner(QObject* parent = nullptr);

    // Why export cannot write `folder` ("" when it can): it must be new or an empty folder, named
    // by an absolute path (parallax-cli runs in the console's working folder).
    static QString folderProblem(const QString& folder);
    // After --store STORE.
    static QStringList arguments(qint64 runId, const QString& folder, Content content);

    void start(qint64 runId, const QString& folder, Content content);
    qint64 runId() const { return m_runId; }
    QString folder() const { return m_folder; }

signals:
    // The folder is written; `summary` is the command's last line ("DIR: 290 tensors, 196 LoRA
    // adapters merged; load it with transformers' from_pretrained").
    void finished(qint64 runId, const QString& folder, const QString& summary);

protected:
    void answered(int exitCode, const QString& output) override;

private:
    qint64 m_runId = 0;
    QString m_folder;
};

} // namespace parallax
