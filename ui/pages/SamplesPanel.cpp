#include "ui/pages/SamplesPanel.h"

#include "ui/models/RunSamplesModel.h"
#include "ui/widgets/SampleImage.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QScrollArea>
#include <QSignalBlocker>
#include <QSlider>
#include <QVBoxLayout>

#include <algorithm>

namespace parallax {

SamplesPanel::SamplesPanel(StoreWatcher* watcher, QWidget* parent)
    : QWidget(parent), m_model(new RunSamplesModel(watcher, this)) {
    setObjectName(QStringLiteral("samplesPanel"));
    auto* root = new QVBoxLayout(this);
    root->setContentsMargins(4, 4, 4, 0);
    root->setSpacing(2);
    const StepStrip strip =
        buildStepStrip(this, root, QStringLiteral("step 00000 of 00000 · 00 images"), Qt::Horizontal);
    m_slider = strip.slider;
    m_slider->setObjectName(QStringLiteral("sampleStep"));
    m_slider->setToolTip(tr("The step whose images are shown; at the right end it follows new steps"));
    m_label = strip.label;
    m_label->setObjectName(QStringLiteral("sampleStepText"));
    m_row = strip.body;
    m_rowLayout = static_cast<QHBoxLayout*>(strip.bodyLayout);
    m_rowLayout->addStretch(1);

    connect(m_slider, &QSlider::valueChanged, this, &SamplesPanel::onSliderMoved);
    connect(m_model, &RunSamplesModel::changed, this, &SamplesPanel::onModelChanged);
    // The images of a step not held come from the store after the step is shown.
    connect(m_model, &RunSamplesModel::imagesRead, this, &SamplesPanel::rebuild);
    onModelChanged();
}

void SamplesPanel::setRun(qint64 run) {
    m_followNewest = true;
    m_step.reset();
    m_model->setRun(run);
}

void SamplesPanel::onModelChanged() {
    m_steps = m_model->steps();
    if (m_steps.empty()) {
        m_step.reset();
    } else if (m_followNewest || !m_step) {
        m_step = m_steps.back();
    } else {
        m_step = m_model->nearestStep(*m_step).value_or(m_steps.front());
    }
    {
        const QSignalBlocker block(m_slider);
        m_slider->setRange(0, std::max(0, int(m_steps.size()) - 1));
        m_slider->setEnabled(m_steps.size() > 1);
        if (m_step) m_slider->setValue(int(std::lower_bound(m_steps.begin(), m_steps.end(), *m_step) - m_steps.begin()));
    }
    rebuild();
    if (m_model->hasSamples() != m_available) {
        m_available = m_model->hasSamples();
        emit availabilityChanged(m_available);
    }
}

void SamplesPanel::onSliderMoved(int position) {
    if (position < 0 || size_t(position) >= m_steps.size()) return;
    m_step = m_steps[size_t(position)];
    m_followNewest = size_t(position) + 1 == m_steps.size();
    rebuild();
}

void SamplesPanel::showStep(int64_t step) {
    const std::optional<int64_t> nearest = m_model->nearestStep(step);
    if (!nearest) return;
    m_slider->setValue(int(std::lower_bound(m_steps.begin(), m_steps.end(), *nearest) - m_steps.begin()));
}

QString SamplesPanel::stepText() const { return m_label->text(); }

QList<SampleImage*> SamplesPanel::images() const {
    return m_row->findChildren<SampleImage*>();
}

void SamplesPanel::rebuild() {
    while (QLayoutItem* item = m_rowLayout->takeAt(0)) {
        delete item->widget();
        delete item;
    }
    if (!m_step) {
        const int64_t every = m_model->samplesEvery();
        m_label->setText(!m_model->isRead() ? QString()
                         : every == 1       ? tr("No images yet: the run draws them every step")
                         : every > 1        ? tr("No images yet: the run draws them every %1 steps").arg(every)
                                            : tr("The run drew no images"));
        m_rowLayout->addStretch(1);
        return;
    }
    const std::vector<SampleEvent>& rows = m_model->samplesAt(*m_step);
    const QString images = rows.size() == 1 ? tr("1 image") : tr("%1 images").arg(rows.size());
    m_label->setText(m_model->stepsTotal() > 0 ? tr("step %1 of %2 · %3").arg(*m_step).arg(m_model->stepsTotal()).arg(images)
                                               : tr("step %1 · %2").arg(*m_step).arg(images));
    for (const SampleEvent& s : rows) m_rowLayout->addWidget(SampleImage::tile(*m_model, s, m_row));
    m_rowLayout->addStretch(1);
}

} // namespace parallax
