#pragma once

#include "ui/pages/SpecForm.h"

#include <QObject>

#include <vector>

class QLabel;
class QWidget;

namespace parallax {

class ConversationDatasetModel;
class SpecFormModel;
struct SpecIssue;

// The New run form's rows for fine-tuning a published model: beneath model.from, what the model is
// (ModelSourceSummary: origin, sizes, parameters and what trains, tokenizer, each part under
// [finetune]); beneath data.path, the conversations dataset as a run reads it
// (ConversationDatasetModel: samples, images and visual tokens per sample, samples dropped, and
// its first sample rendered with the trained spans marked).
class FinetuneRows : public QObject {
    Q_OBJECT
public:
    explicit FinetuneRows(SpecFormModel* model, QObject* parent = nullptr);

    std::vector<SpecForm::Placement> placements() const;
    // Warnings for the Issues box: the dataset as read would make a run refuse to start.
    std::vector<SpecIssue> issues() const;

    QLabel* modelLabel() const { return m_model; }
    QLabel* datasetLabel() const { return m_dataset; }
    QLabel* previewLabel() const { return m_preview; }
    ConversationDatasetModel* dataset() const { return m_conversations; }

signals:
    void issuesChanged();

private:
    void showModel();
    void showDataset();

    SpecFormModel* m_form;
    ConversationDatasetModel* m_conversations;
    QLabel* m_model;
    QWidget* m_datasetRow;
    QLabel* m_dataset;
    QLabel* m_preview;
};

} // namespace parallax
