#pragma once

#include "ui/models/BubbleHistory.h"
#include "ui/models/PipelineRunModel.h"

#include <QString>
#include <QWidget>

#include <cstdint>
#include <optional>
#include <vector>

class QCheckBox;
class QComboBox;
class QHBoxLayout;
class QLabel;
class QPushButton;
class QSplitter;
class QTableView;
class QVBoxLayout;

class QPainter;
class QColor;

namespace parallax {

class CurvePlot;
class PipelineRunModel;
class PipelineTimeline;
class SpanModel;
class StoreWatcher;

// The pipeline of one run as it ran, one sampled step at a time (the worker records spans every
// telemetry.span_every steps): the step's timeline, and per stage the measured bubble next to the
// theoretical one for the run's schedule (p, m, v from its spec). Steps are chosen from a list or
// with Previous/Next; while the run trains, newly sampled steps appear, and with "Follow newest"
// on the newest is shown as it arrives. Everything is read by a PipelineRunModel, through the store
// watcher's thread.
//
// A running run's newest sampled step is held back until a later one (or the run's end) shows
// that every rank has written its spans, as StoreWatcher does: a half-written step would show
// bubbles that are not there.
//
// Beside the table, the bubble over the steps: every sampled step's measured bubble (all stages)
// with the schedule's theoretical one as a dashed reference line (BubbleHistory); a click on it
// shows the sampled step nearest the click.
class PipelinePage : public QWidget {
    Q_OBJECT
public:
    // Its icon in the navigation (staggered bars), on PageIcons' 24 x 24 grid with the pen set.
    static void paintIcon(QPainter& p, const QColor& color);
    // While the store changes, the sampled steps are read again at most this often.
    static constexpr int kStepsRefreshMs = PipelineRunModel::kStepsRefreshMs;

    explicit PipelinePage(StoreWatcher* watcher, QWidget* parent = nullptr);
    ~PipelinePage() override;

    void setRun(qint64 run); // 0: none
    qint64 run() const;
    // Whether the page is in view (the default). One that is not (another page of the window is)
    // reads neither steps nor spans: the run and step asked for are read and shown once it is in
    // view again (PipelineRunModel::setActive).
    void setInView(bool on);

    // At most this many steps' spans are measured per read, so that the store's thread stays free.
    static constexpr size_t kBubbleStepsPerRead = PipelineRunModel::kBubbleStepsPerRead;

    // Sampled steps whose spans are complete, ascending.
    const std::vector<int64_t>& steps() const { return m_steps; }
    // The step whose spans are shown (none before the first has loaded).
    std::optional<int64_t> shownStep() const { return m_shownStep; }
    // The step being shown or about to be.
    std::optional<int64_t> currentStep() const { return m_wantedStep; }
    void setStep(int64_t step); // the nearest sampled step at or before `step`
    void showPreviousStep();
    void showNextStep();
    void showNewestStep();
    bool followNewest() const { return m_follow; }
    void setFollowNewest(bool on);
    // True while steps or spans are being read.
    bool isLoading() const;

    SpanModel* model() const { return m_model; }
    PipelineRunModel* runModel() const { return m_runModel; }
    PipelineTimeline* timeline() const { return m_timeline; }
    QTableView* table() const { return m_table; }
    QSplitter* splitter() const { return m_splitter; }
    QWidget* bubblePane() const { return m_lower; }
    const BubbleHistory& bubbleHistory() const;
    CurvePlot* bubblePlot() const { return m_bubblePlot; }
    // Shown texts, for tests and screenshots.
    QString headerText() const;
    QString summaryText() const;
    QString problemsText() const;

public slots:
    // Reads the sampled steps again now.
    void refreshSteps();

signals:
    void stepsChanged();
    void stepShown(qint64 step);

private:
    void buildUi();
    QHBoxLayout* buildControls();
    QSplitter* buildPanes();
    void buildBubblePane(QWidget* lower, QVBoxLayout* lowerLayout);
    void applySteps();
    void applySpans(qint64 step);
    void updateNavigation();
    void updateSummary();

    PipelineRunModel* m_runModel;
    // The steps listed in the step box (as last read), ascending.
    std::vector<int64_t> m_steps;
    std::optional<int64_t> m_wantedStep;
    std::optional<int64_t> m_shownStep;
    bool m_follow = true;
    int m_theoryCurve = 0;
    QString m_runTitle;
    QString m_layoutText;

    SpanModel* m_model = nullptr;
    PipelineTimeline* m_timeline = nullptr;
    QTableView* m_table = nullptr;
    CurvePlot* m_bubblePlot = nullptr;
    QSplitter* m_splitter = nullptr;
    QWidget* m_lower = nullptr; // the bubble summary, table and chart, hidden without a pipeline
    QLabel* m_header = nullptr;
    QLabel* m_summary = nullptr;
    QLabel* m_problems = nullptr;
    QComboBox* m_stepBox = nullptr;
    QPushButton* m_previous = nullptr;
    QPushButton* m_next = nullptr;
    QPushButton* m_newest = nullptr;
    QCheckBox* m_followBox = nullptr;
    QCheckBox* m_allRanks = nullptr;
    QPushButton* m_resetZoom = nullptr;
};

} // namespace parallax
