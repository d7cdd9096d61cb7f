#pragma once

#include "ui/models/RunDetail.h"

#include <QList>
#include <QPointer>
#include <QString>
#include <QWidget>

class QFormLayout;
class QHBoxLayout;
class QLabel;
class QPushButton;
class QScrollArea;
class QTableWidget;

namespace parallax {

class RunListModel;
class StoreWatcher;

// The Runs page's pane of the selected run (RunDetail says what it shows): its state and why it
// ended, its times, folder and launch command (selectable; Copy puts the command on the
// clipboard), the run it continues and the runs that continue it (a click selects that run), its
// checkpoints newest first and its tags and notes, read-only. Records come from the runs list; the
// checkpoints are read on the store watcher's thread, again when the run's record changes (a step,
// its end), one read at a time. With no run selected it shows a short hint.
class RunDetailPane : public QWidget {
    Q_OBJECT
public:
    RunDetailPane(RunListModel* runs, StoreWatcher* watcher, QWidget* parent = nullptr);

    // Shows run `id` (0: none) as the list has it now; called again when the list changed.
    void setRun(qint64 id);
    qint64 run() const { return m_detail.run; }
    const RunDetail& detail() const { return m_detail; }

    QLabel* hintLabel() const { return m_hint; }
    QLabel* titleLabel() const { return m_title; }
    QLabel* stateLabel() const { return m_state; }
    QLabel* reasonLabel() const { return m_reason; }
    QLabel* runDirLabel() const { return m_runDir; }
    QLabel* commandLabel() const { return m_command; }
    QPushButton* copyCommandButton() const { return m_copy; }
    // The runs of the lineage: the one it continues first, then those that continue it.
    QList<QPushButton*> lineageButtons() const { return m_lineageButtons; }
    QTableWidget* checkpointsView() const { return m_checkpoints; }
    QLabel* checkpointsStatus() const { return m_checkpointsStatus; }
    QLabel* tagsLabel() const { return m_tags; }
    QLabel* notesLabel() const { return m_notes; }
    // Whether a read of checkpoints is on its way.
    bool isReading() const { return m_reading; }

public slots:
    void copyCommand();

signals:
    // A run of the lineage was clicked.
    void runActivated(qint64 id);
    // The checkpoints of the shown run are in the table.
    void checkpointsShown(qint64 id);

private:
    QWidget* buildSummary();
    QWidget* buildCheckpoints();
    QLabel* addRow(QFormLayout* form, const QString& label);
    void showTexts();
    void showLineage();
    void readCheckpoints();
    void showCheckpoints(const std::vector<RunDetail::Checkpoint>& rows);

    RunListModel* m_runs;
    QPointer<StoreWatcher> m_watcher;
    RunDetail m_detail;
    // What the checkpoints were last read for: the run and its progress (steps, state, folder).
    QString m_readKey;
    bool m_reading = false;
    bool m_readAgain = false;

    QLabel* m_hint = nullptr;
    QScrollArea* m_scroll = nullptr;
    QWidget* m_body = nullptr;
    QLabel* m_title = nullptr;
    QLabel* m_state = nullptr;
    QFormLayout* m_form = nullptr;
    QLabel* m_reason = nullptr;
    QLabel* m_started = nullptr;
    QLabel* m_ended = nullptr;
    QLabel* m_duration = nullptr;
    QLabel* m_runDir = nullptr;
    QLabel* m_command = nullptr;
    QPushButton* m_copy = nullptr;
    QHBoxLayout* m_lineage = nullptr;
    QLabel* m_noLineage = nullptr;
    QList<QPushButton*> m_lineageButtons;
    std::optional<RunDetail::Link> m_shownContinues;
    std::vector<RunDetail::Link> m_shownContinuedBy;
    QLabel* m_tags = nullptr;
    QLabel* m_notes = nullptr;
    QTableWidget* m_checkpoints = nullptr;
    QLabel* m_checkpointsStatus = nullptr;
};

} // namespace parallax
