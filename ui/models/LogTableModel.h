#pragma once

#include "core/store/StoreTypes.h"

#include <QAbstractTableModel>
#include <QPointer>
#include <QString>

#include <cstdint>
#include <list>
#include <optional>
#include <set>
#include <unordered_map>
#include <vector>

namespace parallax {

class StoreWatcher;

// All ranks' log lines of one run, filtered by a LogQuery (ranks, minimum level, full-text
// match), for a table of a million lines or more. Nothing is loaded up front: the row count comes
// from RunStore::logCount, and rows are read in pages of kPageRows when a view asks for them,
// through the StoreWatcher's thread (the GUI thread never waits on SQLite; a row not read yet
// shows empty until its page arrives, a few milliseconds later). Pages are read by id ranges, not
// OFFSET: counting also records the id before every page boundary, so any page is one indexed
// range read however deep into the log it lies. At most kMaxCachedPages stay in memory.
//
// New lines (the watcher's logsAdded) are counted past the last id covered and appended as rows;
// the page with the new last row comes with the count, ready for a view that follows the end.
class LogTableModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { TimeColumn, HostColumn, RankColumn, LevelColumn, MessageColumn, ColumnCount };
    enum Role {
        LogIdRole = Qt::UserRole + 1,
        LevelRole,  // "debug" | "info" | "warn" | "error"
        RankNumberRole,
        StreamRole,
        LoadedRole, // false while the row's page is being read
    };
    static constexpr int kPageRows = 1000;
    static constexpr int kMaxCachedPages = 64;

    explicit LogTableModel(StoreWatcher* watcher, QObject* parent = nullptr);
    ~LogTableModel() override;

    // 0: no run. Watches the run through the watcher while set.
    void setRun(qint64 run);
    qint64 run() const { return m_run; }
    // The run's record as the watcher last sent it (nullopt until it arrives).
    const std::optional<RunRecord>& runRecord() const { return m_record; }
    // The host of each rank as the run knows it (run_start, else the one host of a run on one
    // machine): the Host of a line stored without one (written before run_start arrived).
    QString hostOfRank(int rank) const;
    // Ranks, min_level and match are used; after_id, limit, offset and descending are not.
    void setQuery(const LogQuery& query);
    const LogQuery& query() const { return m_query; }

    // False from a new run or query until its first count arrived.
    bool isReady() const { return m_ready; }
    bool isLoaded(int row) const;
    std::optional<LogRow> rowAt(int row) const; // nullopt until its page is loaded
    // Asks for the row of the first line at `level` or above under the current filter; answers
    // with firstFound (-1 when there is none).
    void findFirst(const QString& level = QStringLiteral("error"));

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    static QColor levelColor(const QString& level);
    // The message as shown: a run end's unknown step ("at step 0" of a failure) left out.
    static QString messageText(const LogRow& row);

signals:
    // The filter's first count arrived (after setRun/setQuery), or new lines were appended.
    void countChanged(int rows);
    // The run's record arrived or changed (its name, state, hosts).
    void runRecordChanged();
    void pageLoaded(int firstRow, int lastRow);
    void queryFailed(const QString& message);
    void firstFound(int row);

private:
    struct Extension {
        int64_t added = 0;
        int64_t coveredId = 0;
        std::vector<int64_t> anchors; // ids before the page boundaries past the old count
        bool settled = true;          // false: the run kept changing under the count; retry
        // The page holding the new last row, read in the same job: following the log's end
        // then costs one trip to the store's thread, not two.
        int64_t tailPage = -1;
        std::vector<LogRow> tailRows;
    };
    struct Page {
        std::vector<LogRow> rows;
        std::list<int64_t>::iterator lru;
    };

    void reset();
    void extend();  // counts lines past m_coveredId (coalesced: one read in flight)
    void applyExtension(quint64 generation, const Extension& ext);
    void requestPage(int64_t page) const;
    void applyPage(quint64 generation, int64_t page, std::vector<LogRow> rows);
    void onLogsAdded(qint64 run);
    const LogRow* loadedRow(int row) const;

    void hostsChanged();

    QPointer<StoreWatcher> m_watcher;
    qint64 m_run = 0;
    std::optional<RunRecord> m_record;
    std::vector<std::string> m_rankHosts; // from run_start
    LogQuery m_query;
    quint64 m_generation = 0; // bumped by every reset; late answers of older ones are dropped
    bool m_ready = false;
    int64_t m_count = 0;
    int64_t m_coveredId = 0; // every matching line with id <= this is counted
    std::vector<int64_t> m_anchors; // m_anchors[p]: id of the row before page p (0 for page 0)
    bool m_extending = false;
    bool m_extendAgain = false;
    mutable std::unordered_map<int64_t, Page> m_pages;
    mutable std::list<int64_t> m_lru; // most recently used first
    mutable std::set<int64_t> m_requested;
};

} // namespace parallax
