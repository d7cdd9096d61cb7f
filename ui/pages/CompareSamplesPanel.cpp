#include "ui/pages/CompareSamplesPanel.h"

#include "ui/models/RunSamplesModel.h"
#include "ui/widgets/SampleImage.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QScrollArea>
#include <QSignalBlocker>
#include <QSlider>
#include <QVBoxLayout>

#include <algorithm>
#include <set>

namespace parallax {

CompareSamplesPanel::CompareSamplesPanel(StoreWatcher* watcher, QWidget* parent) : QWidget(parent), m_watcher(watcher) {
    setObjectName(QStringLiteral("compareSamplesPanel"));
    auto* root = new QVBoxLayout(this);
    const StepStrip strip = buildStepStrip(this, root, QStringLiteral("step 000000"), Qt::Vertical);
    m_slider = strip.slider;
    m_slider->setObjectName(QStringLiteral("compareSampleStep"));
    m_slider->setToolTip(tr("The step whose images are compared; a run without images there shows its newest "
                            "step before it"));
    m_label = strip.label;
    m_body = strip.body;
    m_bodyLayout = static_cast<QVBoxLayout*>(strip.bodyLayout);
    connect(m_slider, &QSlider::valueChanged, this, &CompareSamplesPanel::onSliderMoved);
    onModelChanged();
}

void CompareSamplesPanel::setRuns(const std::vector<std::pair<qint64, QString>>& runs) {
    if (runs == m_runs) return;
    m_runs = runs;
    std::set<qint64> wanted;
    for (const auto& [id, name] : runs) wanted.insert(id);
    for (auto it = m_models.begin(); it != m_models.end();) {
        if (wanted.count(it->first)) {
            ++it;
            continue;
        }
        it->second->deleteLater();
        it = m_models.erase(it);
    }
    for (qint64 id : wanted) {
        if (m_models.count(id)) continue;
        auto* model = new RunSamplesModel(m_watcher, this);
        model->setRun(id);
        connect(model, &RunSamplesModel::changed, this, &CompareSamplesPanel::onModelChanged);
        connect(model, &RunSamplesModel::imagesRead, this, &CompareSamplesPanel::rebuild);
        m_models[id] = model;
    }
    onModelChanged();
}

RunSamplesModel* CompareSamplesPanel::model(qint64 run) const {
    const auto it = m_models.find(run);
    return it == m_models.end() ? nullptr : it->second;
}

void CompareSamplesPanel::onModelChanged() {
    std::set<int64_t> steps;
    bool available = false;
    for (const auto& [id, model] : m_models) {
        for (int64_t s : model->steps()) steps.insert(s);
        available = available || model->hasSamples();
    }
    m_steps.assign(steps.begin(), steps.end());
    if (m_steps.empty()) m_step.reset();
    else if (m_followNewest || !m_step) m_step = m_steps.back();
    else if (!steps.count(*m_step)) m_step = m_steps.front(); // the runs that had it left the comparison
    {
        const QSignalBlocker block(m_slider);
        m_slider->setRange(0, std::max(0, int(m_steps.size()) - 1));
        m_slider->setEnabled(m_steps.size() > 1);
        if (m_step) m_slider->setValue(int(std::lower_bound(m_steps.begin(), m_steps.end(), *m_step) - m_steps.begin()));
    }
    rebuild();
    if (available != m_available) {
        m_available = available;
        emit availabilityChanged(available);
    }
}

void CompareSamplesPanel::onSliderMoved(int position) {
    if (position < 0 || size_t(position) >= m_steps.size()) return;
    m_step = m_steps[size_t(position)];
    m_followNewest = size_t(position) + 1 == m_steps.size();
    rebuild();
}

void CompareSamplesPanel::chooseStep(int64_t step) {
    const auto after = std::upper_bound(m_steps.begin(), m_steps.end(), step);
    if (after == m_steps.begin()) return;
    m_slider->setValue(int(after - m_steps.begin()) - 1);
}

QString CompareSamplesPanel::stepText() const { return m_label->text(); }

QString CompareSamplesPanel::rowText(qint64 run) const {
    const auto it = m_rows.find(run);
    return it == m_rows.end() ? QString() : it->second.text->text();
}

std::optional<int64_t> CompareSamplesPanel::rowStep(qint64 run) const {
    const auto it = m_rows.find(run);
    return it == m_rows.end() ? std::nullopt : it->second.step;
}

QList<SampleImage*> CompareSamplesPanel::images(qint64 run) const {
    const auto it = m_rows.find(run);
    return it == m_rows.end() ? QList<SampleImage*>() : it->second.widget->findChildren<SampleImage*>();
}

void CompareSamplesPanel::rebuild() {
    while (QLayoutItem* item = m_bodyLayout->takeAt(0)) {
        delete item->widget();
        delete item;
    }
    m_rows.clear();
    m_label->setText(m_step ? tr("step %1").arg(*m_step) : QString());
    for (const auto& [id, name] : m_runs) addRow(id, name);
    m_bodyLayout->addStretch(1);
}

// A run's row: its name and what it shows on the left, its images of the step nearest the chosen one.
void CompareSamplesPanel::addRow(qint64 run, const QString& name) {
    RunSamplesModel* model = m_models.at(run);
    Row row;
    row.widget = new QWidget(m_body);
    row.widget->setObjectName(QStringLiteral("compareSamples%1").arg(run));
    auto* layout = new QHBoxLayout(row.widget);
    layout->setContentsMargins(0, 0, 0, 0);
    auto* names = new QVBoxLayout;
    // Elided rather than wrapped, so that the rows shrink to the panel (SampleImage::tile).
    const int namesWidth = fontMetrics().horizontalAdvance(QStringLiteral("(nearest at or before 000000)M"));
    auto* title = new QLabel(row.widget);
    QFont bold = title->font();
    bold.setBold(true);
    title->setFont(bold);
    title->setText(title->fontMetrics().elidedText(name, Qt::ElideRight, namesWidth));
    title->setToolTip(name);
    row.text = new QLabel(row.widget);
    row.text->setObjectName(QStringLiteral("compareSamplesStep"));
    names->addWidget(title);
    names->addWidget(row.text);
    names->addStretch(1);
    auto* namesBox = new QWidget(row.widget);
    namesBox->setLayout(names);
    namesBox->setFixedWidth(namesWidth);
    layout->addWidget(namesBox);

    if (model->steps().empty()) {
        row.text->setText(!model->isRead() ? tr("reading…")
                          : model->samplesEvery() > 0 ? tr("no samples yet")
                                                      : tr("no samples"));
    } else if (const std::optional<int64_t> at = m_step ? model->nearestStep(*m_step) : std::nullopt) {
        row.step = at;
        row.text->setText(*at == *m_step ? tr("step %1").arg(*at)
                                         : tr("step %1\n(nearest at or before %2)").arg(*at).arg(*m_step));
        for (const SampleEvent& s : model->samplesAt(*at)) layout->addWidget(SampleImage::tile(*model, s, row.widget));
    } else {
        row.text->setText(tr("no samples at or before step %1").arg(m_step.value_or(0)));
    }
    layout->addStretch(1);
    m_bodyLayout->addWidget(row.widget);
    m_rows[run] = row;
}

} // namespace parallax
