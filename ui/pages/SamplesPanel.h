#pragma once

#include <QList>
#include <QString>
#include <QWidget>

#include <cstdint>
#include <optional>
#include <vector>

class QHBoxLayout;
class QLabel;
class QSlider;

namespace parallax {

class RunSamplesModel;
class SampleImage;
class StoreWatcher;

// The Live page's Samples tab: the images a run drew ([samples]) at one step side by side, each
// captioned with its index, seed, size and prompt, under a step slider and a line such as
// "step 40 of 300 · 2 images". The slider starts at the newest step and follows new steps while it
// stays there; moved back, it stays where it was put. Rows come through RunSamplesModel.
class SamplesPanel : public QWidget {
    Q_OBJECT
public:
    explicit SamplesPanel(StoreWatcher* watcher, QWidget* parent = nullptr);

    void setRun(qint64 run);
    RunSamplesModel* model() const { return m_model; }
    // The run has images or its spec asks for them: the page shows the tab.
    bool hasSamples() const { return m_available; }

    // The step whose images are shown; none while the run has none.
    std::optional<int64_t> shownStep() const { return m_step; }
    // Shows the images of `step` (the newest at or below it), as moving the slider there does.
    void showStep(int64_t step);
    QString stepText() const;
    QSlider* stepSlider() const { return m_slider; }
    // The images shown, by index.
    QList<SampleImage*> images() const;

signals:
    // hasSamples() changed.
    void availabilityChanged(bool available);

private:
    void onModelChanged();
    void onSliderMoved(int position);
    void rebuild();

    RunSamplesModel* m_model;
    QSlider* m_slider = nullptr;
    QLabel* m_label = nullptr;
    QWidget* m_row = nullptr;
    QHBoxLayout* m_rowLayout = nullptr;
    std::vector<int64_t> m_steps;
    std::optional<int64_t> m_step;
    bool m_followNewest = true;
    bool m_available = false;
};

} // namespace parallax
