#pragma once

#include <QList>
#include <QPointer>
#include <QString>
#include <QWidget>

class QComboBox;
class QHBoxLayout;
class QLabel;
class QLineEdit;
class QPushButton;
class QSplitter;
class QTableView;

class QPainter;
class QColor;

namespace parallax {

class ModelExportAction;
class RunDeleter;
class RunFilterModel;
class TableExport;
class RunExporter;
class RunLauncher;
class RunListModel;
class RunDetailPane;
class RunStoreThread;
class StoreWatcher;

// Every run of the store in a sortable table with a text and a state filter. Tags and notes are
// edited in place. Actions on the selected run: open it on the Live page, resume it, compare the
// selected runs, export its metrics (CSV), its trace or its spec (TOML), export its model as a
// published model's folder or its LoRA adapter (ModelExportAction), delete it. Under the table, the
// selected run's detail pane (RunDetailPane).
class RunsPage : public QWidget {
    Q_OBJECT
public:
    // Its icon in the navigation (a list with bullets), on PageIcons' 24 x 24 grid with the pen set.
    static void paintIcon(QPainter& p, const QColor& color);
    RunsPage(RunListModel* runs, StoreWatcher* watcher, RunStoreThread* writer, QWidget* parent = nullptr);

    RunListModel* runsModel() const { return m_runs; }
    RunFilterModel* filterModel() const { return m_filter; }
    QTableView* view() const { return m_view; }
    RunLauncher* launcher() const { return m_launcher; }
    QLineEdit* filterEdit() const { return m_filterEdit; }
    QComboBox* stateCombo() const { return m_state; }
    QPushButton* resumeButton() const { return m_resume; }
    // Export…: the selected run's model written by parallax-cli export.
    ModelExportAction* modelExport() const { return m_modelExport; }
    // The selected run's state, reason, times, command, lineage and checkpoints, under the table.
    RunDetailPane* detailPane() const { return m_detail; }
    // The table over the detail pane.
    QSplitter* splitter() const { return m_splitter; }

    void setStorePath(const QString& path);
    // "" for every state.
    void setStateFilter(const QString& state);
    void setFilterText(const QString& text);

    qint64 currentRun() const; // 0 when none is selected
    QList<qint64> selectedRuns() const;
    void selectRun(qint64 id);

    // Writes the run's metrics as CSV; finished() or failed() tell when it is done. The metrics
    // are read on the watcher's thread.
    void exportMetrics(qint64 id, const QString& path);
    // Writes run `id` as a Chrome/Perfetto trace (parallax-cli trace); exportFinished or exportFailed.
    void exportTrace(qint64 id, const QString& path);
    // Writes the spec the run was started with, as stored.
    bool exportSpec(qint64 id, const QString& path, QString* error = nullptr);
    // Deletes the run's rows (and, when asked, its folder). Runs still going are refused.
    bool deleteRun(qint64 id, bool removeFolder, QString* error = nullptr);

public slots:
    void openCurrent();
    void resumeCurrent();
    void compareSelected();
    void exportMetricsDialog();
    void exportTraceDialog();
    void exportSpecDialog();
    void deleteCurrentDialog();

signals:
    void openRun(qint64 id);
    void compareRuns(const QList<qint64>& ids);
    void statusMessage(const QString& message);
    void exportFinished(const QString& path);
    void exportFailed(const QString& message);

private:
    // The constructor's parts, top to bottom, then the wiring of filters, table, buttons and workers.
    QHBoxLayout* buildFilterBar();
    QTableView* buildTable();
    QHBoxLayout* buildActions();
    void connectActions();
    void updateActions();
    void updateCount();
    void showContextMenu(const QPoint& pos);

    RunListModel* m_runs;
    QPointer<StoreWatcher> m_watcher;
    QPointer<RunStoreThread> m_writer;
    RunFilterModel* m_filter;
    RunLauncher* m_launcher;
    QTableView* m_view = nullptr;
    QSplitter* m_splitter = nullptr;
    RunDetailPane* m_detail = nullptr;
    QLineEdit* m_filterEdit = nullptr;
    QComboBox* m_state = nullptr;
    QLabel* m_count = nullptr;
    QPushButton* m_open = nullptr;
    QPushButton* m_resume = nullptr;
    QString m_resumeTip; // what Resume does, shown while no run that continues the selected one says why not
    QPushButton* m_compare = nullptr;
    QPushButton* m_exportMetrics = nullptr;
    QPushButton* m_exportTrace = nullptr;
    TableExport* m_tableExport = nullptr;
    RunExporter* m_exporter = nullptr;
    RunDeleter* m_deleter = nullptr;
    ModelExportAction* m_modelExport = nullptr;
    QPushButton* m_exportSpec = nullptr;
    QPushButton* m_delete = nullptr;
};

} // namespace parallax
