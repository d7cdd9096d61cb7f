#pragma once

#include "ui/models/DeviceGridModel.h"

#include <QColor>
#include <QElapsedTimer>
#include <QPointer>
#include <QString>
#include <QTimer>
#include <QWidget>

class QCPColorMap;
class QCPColorScale;
class QCustomPlot;
class QShowEvent;

namespace parallax {

// One row per rank (per few ranks when there are more than two pixels a row: in each cell the rank of
// the row farthest from all ranks' median). From the ranks' per-step compute and wait times (rank_steps), a rank x step
// map of the share of each step the rank computed rather than waited in collectives: the
// straggler is the warm row the others' cool rows wait for, a hung rank a row that ends early.
// Runs without rank_steps fall back to a rank x time map of utilization (a GPU's %, a CPU rank's
// process CPU % over its threads). Either way the scale is fixed at 0..100%, shown beside the map,
// in the device grid's colours (RankActivityPalette). Steps or samples are averaged into one cell
// per few pixels; a cell no sample falls in holds the rank's previous value, so the rows have no
// gaps between a rank's first and last sample. The model's changes are coalesced: at most one
// rebuild per kRedrawIntervalMs.
class HeatMapPlot : public QWidget {
    Q_OBJECT
public:
    static constexpr int kRedrawIntervalMs = 500;
    static constexpr int kMaxColumns = 400;

    enum class Mode { Empty, Steps, Time };

    explicit HeatMapPlot(QWidget* parent = nullptr);
    ~HeatMapPlot() override;

    // Follows the model's rows and data changes.
    void setModel(DeviceGridModel* model);
    // Rebuilds the map now (tests, screenshots).
    void rebuildNow();
    QCustomPlot* customPlot() const { return m_plot; }
    QCPColorMap* colorMap() const { return m_map; }

    // What the map shows, as last built.
    Mode mode() const { return m_mode; }
    int columns() const;
    int rows() const;           // rows of cells: ranks, or groups of ranksPerRow() ranks
    int ranksPerRow() const { return m_ranksPerRow; }
    double cellValue(int column, int row) const; // % (NaN: none)
    QColor cellColor(int column, int row) const;  // as drawn; invalid where nothing is drawn
    QString scaleLabel() const;
    // The scale's colour of a value in % (the legend's colour).
    QColor scaleColor(double percent) const;

protected:
    void showEvent(QShowEvent* event) override;

private:
    void scheduleRebuild();
    void rebuild(bool force);
    void buildSteps(int maxColumns);
    void buildTime(int maxColumns);
    void setRowLabels(const std::vector<QString>& labels);
    // Fills the map with `cells` (ranks x columns), ranks binned when there are more than the map
    // has room for (two pixels a row).
    void fillRanks(const std::vector<std::vector<double>>& cells, double firstKey, double cellWidth);
    QString rowName(int row) const;  // "rank 3", "ranks 0-34"
    QString binnedNote() const;      // a tooltip's line on the binning; "" without
    // Sizes the map to `columns` x `rows` cells whose centres run from `firstKey` by `cellWidth`
    // (rows at 0, 1, ...) and fills them with cell(column, row).
    void fill(int columns, int rows, double firstKey, double cellWidth, const std::function<double(int, int)>& cell);

    QPointer<DeviceGridModel> m_model;
    QCustomPlot* m_plot = nullptr;
    QCPColorMap* m_map = nullptr;
    QCPColorScale* m_scale = nullptr;
    QTimer m_timer;
    QElapsedTimer m_sinceRebuild;
    bool m_dirty = false;
    Mode m_mode = Mode::Empty;
    int m_columns = 0; // the map's cells, whatever the colour map holds to draw them
    int m_rows = 0;
    int m_ranks = 0;        // ranks drawn, m_ranksPerRow to a row
    int m_ranksPerRow = 1;
    double m_firstKey = 0;  // the first column's centre (a step, or seconds since the start)
    double m_cellWidth = 1; // steps or seconds a column stands for
};

} // namespace parallax
