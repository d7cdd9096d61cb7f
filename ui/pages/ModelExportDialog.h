#pragma once

#include "ui/models/ModelExportRunner.h"

#include <QDialog>
#include <QString>

#include <optional>

class QLabel;
class QLineEdit;
class QRadioButton;

namespace parallax {

// The run Export… asks about.
struct ModelExportRequest {
    qint64 runId = 0;
    QString runName;
    bool lora = false;       // its adapter alone can be written too
    QString suggestedFolder; // a new folder to offer
};

// Where to write and what.
struct ModelExportChoice {
    QString folder;
    ModelExportRunner::Content content = ModelExportRunner::Content::Merged;
};

// Asks where to write a run's model (a new or empty folder, typed or browsed to) and what: the
// merged model, or for a LoRA run its adapter alone. OK is refused, with why, until the folder is
// one export can write.
class ModelExportDialog : public QDialog {
    Q_OBJECT
public:
    explicit ModelExportDialog(const ModelExportRequest& request, QWidget* parent = nullptr);

    QLineEdit* folderEdit() const { return m_folder; }
    QRadioButton* mergedButton() const { return m_merged; }
    QRadioButton* adapterButton() const { return m_adapter; }
    QLabel* problemLabel() const { return m_problem; }
    ModelExportChoice choice() const;

    // Shows the dialog; nullopt when it was cancelled.
    static std::optional<ModelExportChoice> ask(QWidget* parent, const ModelExportRequest& request);

public slots:
    void accept() override;

private:
    void browse();

    QLineEdit* m_folder = nullptr;
    QRadioButton* m_merged = nullptr;
    QRadioButton* m_adapter = nullptr;
    QLabel* m_problem = nullptr;
};

} // namespace parallax
