#pragma once

#include "core/store/StoreTypes.h"
#include "ui/models/RunOrigin.h"

#include <QAbstractTableModel>
#include <QColor>
#include <QPointer>
#include <QString>
#include <QStringList>

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

namespace parallax {

class RunStoreThread;

// Every run of the store, one row each, from snapshots of RunStore::listRuns (the model never
// queries the store itself). A new snapshot is merged row by row, so selections and edits in
// progress survive a refresh. Tags and notes are editable: the model shows the edit at once and
// asks its RunStoreThread to write it; until the write is done, snapshots keep the edited value.
class RunListModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column {
        IdColumn,
        StateColumn,
        NameColumn,
        ModelColumn,
        LayoutColumn,
        StepsColumn,
        LossColumn,
        TokensPerSecondColumn,
        MfuColumn,
        DurationColumn,
        CreatedColumn,
        TagsColumn,
        NotesColumn,
        // Added after the others, so that a header state saved before them restores each column
        // it knew; the page shows them after Model.
        BaseModelColumn, // the folder of model.from, or the preset
        FinetuneColumn,  // "full", "LoRA r 16", or "—"
        ColumnCount
    };
    enum Role {
        RunIdRole = Qt::UserRole + 1,
        StateRole,   // the state text, e.g. "running"
        SortRole,    // a value that sorts the column (numbers as numbers, missing last)
    };

    explicit RunListModel(QObject* parent = nullptr);

    // Where tags and notes are written; without one the model is read-only.
    void setWriter(RunStoreThread* writer);

    // Merges a snapshot (any order); rows keep the model's order by descending id.
    void setRuns(std::vector<RunRecord> runs);
    // The current time for durations of runs still going (seconds since the epoch).
    void setNow(double now);
    double now() const { return m_now; }

    const RunRecord& record(int row) const { return m_runs[static_cast<size_t>(row)]; }
    // Lower-case text a filter matches: id, name, state, model, layout, tags and notes.
    const QString& searchText(int row) const { return m_search[static_cast<size_t>(row)]; }
    int rowOfRun(int64_t id) const; // -1 when absent
    std::optional<RunRecord> run(int64_t id) const;
    int runningCount() const;
    // The run's base model and finetune mode, from its stored spec (parsed once per spec, when a
    // row first needs it); an empty origin for row -1.
    const RunOrigin& origin(int row) const;

    // The step a resumed run started from (its run_start's start_step), by run id: the Runs page
    // reads them for the runs that have a parent_run. Rows of those runs change.
    void setResumeSteps(const std::map<int64_t, int64_t>& steps);
    bool hasResumeStep(int64_t id) const { return m_resumeSteps.count(id) > 0; }
    // "resumed from #3 at step 12" for a resumed run, "" otherwise.
    QString resumedFromText(const RunRecord& r) const;
    // What a run's lineage is, for its tooltip: where it resumed from, and the runs that resumed it.
    QString lineageText(const RunRecord& r) const;

    // A raw value of the column for sorting; empty for a missing number.
    std::optional<double> sortNumber(int row, int column) const;
    // A cell's value as data for RawValueRole (see TableRoles.h): what Export CSV writes.
    QVariant rawValue(int row, int column) const;
    static QColor stateColor(const QString& state);
    static QString formatDuration(double seconds);
    // Tags as typed in the table: separated by commas or spaces, empty ones dropped, each once.
    static QStringList parseTags(const QString& text);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
    Qt::ItemFlags flags(const QModelIndex& index) const override;
    bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;

signals:
    // A write of tags or notes failed; the edit was taken back.
    void writeFailed(const QString& message);

private:
    void applyPending(RunRecord& r) const;
    static QString buildSearchText(const RunRecord& r);
    double durationOf(const RunRecord& r) const; // < 0: not started

    std::vector<RunRecord> m_runs; // by descending id
    std::vector<QString> m_search;
    // Edits on their way to the store, by run id, with a count of writes still queued.
    struct Pending {
        std::optional<std::vector<std::string>> tags;
        std::optional<std::string> notes;
        int writes = 0;
    };
    std::map<int64_t, Pending> m_pending;
    std::map<int64_t, int64_t> m_resumeSteps;
    // Origins by run id, with the spec they were read from (a digest of it).
    struct CachedOrigin {
        size_t specHash = 0;
        RunOrigin origin;
    };
    mutable std::map<int64_t, CachedOrigin> m_origins;
    QPointer<RunStoreThread> m_writer;
    double m_now = 0;
};

} // namespace parallax
