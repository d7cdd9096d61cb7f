#pragma once

#include "ui/pages/SpecForm.h"

#include <QObject>
#include <QString>

#include <vector>

class QLabel;

namespace parallax {

class CacheRunner;
class CaptionDatasetModel;
class ProbeRow;
class SpecDocument;
class SpecFormModel;
struct SpecIssue;

// The New run form's row beneath data.path for a spec that trains a latent model (qwen_image) on
// an image-caption dataset: its images and aspect buckets, how much of its latent cache is there
// ("cache: 32 of 70 encoded" or "cache: complete") from CaptionDatasetModel, and "Cache now", which
// runs `parallax-cli cache` on the spec as the form has it (CacheRunner), shows its progress lines
// and reads the cache again when it ends.
class DatasetCacheRow : public QObject {
    Q_OBJECT
public:
    explicit DatasetCacheRow(SpecDocument* document, QObject* parent = nullptr);

    std::vector<SpecForm::Placement> placements() const;

    CaptionDatasetModel* dataset() const { return m_dataset; }
    CacheRunner* runner() const { return m_runner; }
    ProbeRow* row() const { return m_row; }
    QLabel* summaryLabel() const { return m_summary; }
    // Warnings for the Issues box: a run of the spec is refused until the cache is complete.
    std::vector<SpecIssue> issues() const;

signals:
    // issues() changed.
    void issuesChanged();

private:
    void startOrStop();
    void showDataset();

    SpecDocument* m_document;
    SpecFormModel* m_model;
    CaptionDatasetModel* m_dataset;
    CacheRunner* m_runner;
    ProbeRow* m_row;
    QLabel* m_summary;
};

} // namespace parallax
