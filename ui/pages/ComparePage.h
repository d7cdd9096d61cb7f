#pragma once

#include "ui/models/CompareRun.h"
#include "ui/models/MetricSeriesTypes.h"
#include "ui/models/RunColors.h"

#include <QList>
#include <QTimer>
#include <QWidget>

#include <map>
#include <vector>

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QSplitter;
class QTableView;
class QTabWidget;

class QPainter;
class QColor;

namespace parallax {

class CompareRunsModel;
class CompareSamplesPanel;
class CurvePlot;
class SmoothingBox;
class RunCheckModel;
class RunFilterModel;
class RunListModel;
class SpecDiffModel;
class StoreWatcher;
class SummaryModel;

// Several runs side by side: pick them in a checkable list; their curves overlay in one plot (x by
// step, wall time since each run's start, or tokens), a table shows only the spec fields that
// differ, another the headline figures; the images the runs drew ([samples]) side by side at one
// step in a tab beside the curves. Runs still going are re-read as they advance.
class ComparePage : public QWidget {
    Q_OBJECT
public:
    // Its icon in the navigation (two curves), on PageIcons' 24 x 24 grid with the pen set.
    static void paintIcon(QPainter& p, const QColor& color);
    // A running run is re-read at most this often.
    static constexpr int kRefreshMs = 2000;

    ComparePage(RunListModel* runs, StoreWatcher* watcher, QWidget* parent = nullptr);

    void setCheckedRuns(const QList<qint64>& ids);
    QList<qint64> checkedRuns() const;
    // The runs as last loaded, in the order of checkedRuns().
    const std::vector<CompareRun>& loadedRuns() const;

    void setMetric(CompareMetric metric);
    void setAxis(MetricAxis axis);
    // The EMA weight in percent drawn over every run's curve (0: raw curves only).
    void setSmoothing(int percent);
    int smoothing() const;
    // The colour of a run's curves; it stays with the run as others are checked and unchecked.
    QColor runColor(qint64 id) const;

    RunCheckModel* pickModel() const { return m_check; }
    SpecDiffModel* diffModel() const { return m_diff; }
    SummaryModel* summaryModel() const { return m_summary; }
    CurvePlot* plot() const { return m_plot; }
    QSplitter* mainSplitter() const { return m_mainSplitter; }
    QSplitter* rightSplitter() const { return m_rightSplitter; }
    // The runs' images at one step, in a tab beside the curves while some run compared has any.
    CompareSamplesPanel* samplesPanel() const { return m_samples; }
    QTabWidget* curveTabs() const { return m_curveTabs; }

public slots:
    void reload();

signals:
    void loaded();
    void openRun(qint64 id);

private:
    // The constructor's parts: the list to pick runs from, the plot with its controls, and the
    // tables of differences and figures under it.
    QWidget* buildPickPanel();
    QWidget* buildCurveTabs(StoreWatcher* watcher);
    QWidget* buildPlotPanel();
    QSplitter* buildTables();
    void scheduleReload(int delayMs);
    // Shows the runs CompareRunsModel read last.
    void apply();
    void rebuildCurves();
    void onRunsChanged();

    RunListModel* m_runs;
    CompareRunsModel* m_compareRuns;
    RunFilterModel* m_filter;
    RunCheckModel* m_check;
    SpecDiffModel* m_diff;
    SummaryModel* m_summary;
    RunColors m_colors;
    // Last step of each loaded run when it was read, to notice that it moved on.
    std::map<qint64, int64_t> m_loadedSteps;
    QTimer m_reload;

    QSplitter* m_mainSplitter = nullptr;
    QSplitter* m_rightSplitter = nullptr;
    QLineEdit* m_filterEdit = nullptr;
    QTableView* m_pick = nullptr;
    QComboBox* m_metric = nullptr;
    QComboBox* m_axis = nullptr;
    QCheckBox* m_logScale = nullptr;
    SmoothingBox* m_smoothing = nullptr;
    QLabel* m_status = nullptr;
    CurvePlot* m_plot = nullptr;
    QTableView* m_diffView = nullptr;
    QTableView* m_summaryView = nullptr;
    QLabel* m_diffTitle = nullptr;
    QTabWidget* m_curveTabs = nullptr;
    CompareSamplesPanel* m_samples = nullptr;
};

} // namespace parallax
