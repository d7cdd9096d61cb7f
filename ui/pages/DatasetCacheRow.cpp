#include "ui/pages/DatasetCacheRow.h"

#include "core/spec/SpecValidator.h"
#include "ui/models/CacheRunner.h"
#include "ui/models/CaptionDatasetModel.h"
#include "ui/models/SpecDocument.h"
#include "ui/models/SpecFormModel.h"
#include "ui/pages/ProbeRow.h"

#include <QDir>
#include <QLabel>
#include <QPushButton>
#include <QVBoxLayout>

namespace parallax {

namespace {

// Not a spec field: the dataset's buckets and cache, shown for a latent model on an image-caption dataset.
const QString kLatentCacheKey = QStringLiteral("console.latent_cache");

} // namespace

DatasetCacheRow::DatasetCacheRow(SpecDocument* document, QObject* parent)
    : QObject(parent), m_document(document), m_model(document->model()), m_dataset(new CaptionDatasetModel(this)),
      m_runner(new CacheRunner(this)) {
    m_row = new ProbeRow(tr("Cache now"),
                         tr("Encode every image (the VAE's latents at its aspect bucket) and every prompt (the text "
                            "encoder's states) of the dataset once, beside it, with model.from's pipeline "
                            "(parallax-cli cache SPEC); a run reads the cache and never loads the encoders. A cut-"
                            "short cache goes on where it stopped"));
    m_row->setObjectName(QStringLiteral("latentCache.row"));
    m_row->status()->setObjectName(QStringLiteral("latentCache.status"));
    m_summary = new QLabel(m_row);
    m_summary->setObjectName(QStringLiteral("latentCache.summary"));
    m_summary->setWordWrap(true);
    m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_row->rows()->insertWidget(0, m_summary);
    m_row->button()->hide();

    m_row->follow(m_runner);
    connect(m_row->button(), &QPushButton::clicked, this, &DatasetCacheRow::startOrStop);
    connect(m_runner, &CacheRunner::finished, this, [this](const QString& summary) {
        m_row->showAnswered();
        m_row->showStatus(summary);
        m_dataset->refresh();
    });
    // A failed or stopped cache keeps what it encoded: the status says how far it got.
    connect(m_runner, &CacheRunner::failed, m_dataset, &CaptionDatasetModel::refresh);
    connect(m_dataset, &CaptionDatasetModel::changed, this, &DatasetCacheRow::showDataset);
    const auto follow = [this] { m_dataset->setSpec(m_model->spec()); };
    connect(m_model, &SpecFormModel::specEdited, this, follow);
    connect(m_model, &SpecFormModel::specReset, this, follow);
    follow();
}

std::vector<SpecForm::Placement> DatasetCacheRow::placements() const {
    return {{QStringLiteral("data.path"), m_row, kLatentCacheKey, &CaptionDatasetModel::applies}};
}

std::vector<SpecIssue> DatasetCacheRow::issues() const {
    return m_dataset->issues();
}

void DatasetCacheRow::showDataset() {
    const QString cache = m_dataset->cacheText();
    m_summary->setText(cache.isEmpty() ? m_dataset->datasetText()
                                       : m_dataset->datasetText() + QChar('\n') + cache);
    // Caching needs a dataset that reads; a complete cache needs nothing more. A cache under way
    // keeps its Stop button.
    const bool offer = m_dataset->isKnown() && m_dataset->error().isEmpty() && !m_dataset->holdsShards() &&
                       !m_dataset->cacheComplete();
    m_row->button()->setVisible(offer || m_runner->isRunning());
    emit issuesChanged();
}

void DatasetCacheRow::startOrStop() {
    if (m_row->stop(m_runner)) return;
    QString error;
    const QString specPath = m_document->writeLaunchSpec(&error);
    if (specPath.isEmpty()) {
        m_row->showStatus(error);
        return;
    }
    m_runner->setStorePath(m_document->storePath());
    m_row->showStarted(tr("Stop caching"), tr("Starting parallax-cli cache %1…").arg(QDir::toNativeSeparators(specPath)));
    m_runner->start(specPath, m_model->spec().launch.device == Device::Cuda);
}

} // namespace parallax
