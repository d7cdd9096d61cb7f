#pragma once

#include <QList>
#include <QString>
#include <QWidget>

#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

class QLabel;
class QSlider;
class QVBoxLayout;

namespace parallax {

class RunSamplesModel;
class SampleImage;
class StoreWatcher;

// The Compare page's Samples tab: for the runs compared, the images each drew ([samples]) at one
// chosen step, a row per run under its name. A run without images at that step shows its newest
// step below it (named in the row), one without any says "no samples". The step slider runs over
// the steps of all the runs; it starts at the newest and follows new steps while it stays there.
class CompareSamplesPanel : public QWidget {
    Q_OBJECT
public:
    explicit CompareSamplesPanel(StoreWatcher* watcher, QWidget* parent = nullptr);

    // The runs compared, in the order of their rows, with the names the rows show.
    void setRuns(const std::vector<std::pair<qint64, QString>>& runs);
    // Some run compared has images or its spec asks for them: the page shows the tab.
    bool hasSamples() const { return m_available; }
    RunSamplesModel* model(qint64 run) const;

    std::optional<int64_t> chosenStep() const { return m_step; }
    // Chooses `step` (the newest of all the runs' steps at or below it), as the slider does.
    void chooseStep(int64_t step);
    QSlider* stepSlider() const { return m_slider; }
    QString stepText() const;
    // What a run's row says beside its name ("step 30", "step 20\n(nearest at or before 30)",
    // "no samples"); empty for a run not compared.
    QString rowText(qint64 run) const;
    // The step whose images a run's row shows; none when it shows none.
    std::optional<int64_t> rowStep(qint64 run) const;
    // A run's images as shown, by index.
    QList<SampleImage*> images(qint64 run) const;

signals:
    // hasSamples() changed.
    void availabilityChanged(bool available);

private:
    struct Row {
        QWidget* widget = nullptr;
        QLabel* text = nullptr;
        std::optional<int64_t> step;
    };
    void onModelChanged();
    void onSliderMoved(int position);
    void rebuild();
    void addRow(qint64 run, const QString& name);

    StoreWatcher* m_watcher;
    std::vector<std::pair<qint64, QString>> m_runs;
    std::map<qint64, RunSamplesModel*> m_models;
    std::map<qint64, Row> m_rows;
    QSlider* m_slider = nullptr;
    QLabel* m_label = nullptr;
    QWidget* m_body = nullptr;
    QVBoxLayout* m_bodyLayout = nullptr;
    std::vector<int64_t> m_steps; // of all the runs, ascending
    std::optional<int64_t> m_step;
    bool m_followNewest = true;
    bool m_available = false;
};

} // namespace parallax
