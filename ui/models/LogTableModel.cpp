#include "ui/models/LogTableModel.h"

#include "core/store/LogLevel.h"
#include "core/store/RunStore.h"
#include "ui/models/StoreWatcher.h"

#include <QColor>
#include <QDateTime>
#include <QRegularExpression>
#include <QTimer>

#include <algorithm>
#include <climits>

namespace parallax {

namespace {

// A count is retried this often when the run kept writing while it ran.
constexpr int kCountAttempts = 4;
constexpr int kRetryDelayMs = 50;

int64_t maxLogId(const RunStore& store, int64_t run) {
    LogQuery last;
    last.limit = 1;
    last.descending = true;
    const std::vector<LogRow> rows = store.logs(run, last);
    return rows.empty() ? 0 : rows.front().id;
}

LogQuery filterOnly(const LogQuery& q) {
    LogQuery f;
    f.ranks = q.ranks;
    f.min_level = q.min_level;
    f.match = q.match;
    return f;
}

QString levelText(LogLevel::Value level) { return QString::fromLatin1(LogLevel::name(level)); }

} // namespace

LogTableModel::LogTableModel(StoreWatcher* watcher, QObject* parent)
    : QAbstractTableModel(parent), m_watcher(watcher) {
    m_anchors.push_back(0);
    if (m_watcher) {
        connect(m_watcher, &StoreWatcher::logsAdded, this,
                [this](qint64 run, const std::vector<LogRow>&) { onLogsAdded(run); });
        connect(m_watcher, &StoreWatcher::runChanged, this, [this](const RunRecord& r) {
            if (r.id != m_run) return;
            const bool hosts = !m_record || m_record->hosts != r.hosts;
            m_record = r;
            emit runRecordChanged();
            if (hosts) hostsChanged();
        });
        connect(m_watcher, &StoreWatcher::runStartLoaded, this, [this](qint64 run, const RunStartEvent& start) {
            if (run != m_run || start.hosts == m_rankHosts) return;
            m_rankHosts = start.hosts;
            hostsChanged();
        });
    }
}

QString LogTableModel::hostOfRank(int rank) const {
    if (rank < 0) return {};
    if (static_cast<size_t>(rank) < m_rankHosts.size() && !m_rankHosts[static_cast<size_t>(rank)].empty())
        return QString::fromStdString(m_rankHosts[static_cast<size_t>(rank)]);
    // Every rank of a run on one host is on it.
    if (m_record && m_record->hosts.size() == 1) return QString::fromStdString(m_record->hosts.front());
    return {};
}

void LogTableModel::hostsChanged() {
    const int rows = rowCount();
    if (rows > 0) emit dataChanged(index(0, HostColumn), index(rows - 1, HostColumn), {Qt::DisplayRole});
}

LogTableModel::~LogTableModel() {
    if (m_watcher && m_run > 0) m_watcher->unwatchLogs(m_run);
}

void LogTableModel::setRun(qint64 run) {
    if (run == m_run) return;
    if (m_watcher && m_run > 0) m_watcher->unwatchLogs(m_run);
    m_run = run;
    m_record.reset();
    m_rankHosts.clear();
    emit runRecordChanged();
    if (m_watcher && m_run > 0) m_watcher->watchLogs(m_run);
    reset();
}

void LogTableModel::setQuery(const LogQuery& query) {
    LogQuery q = filterOnly(query);
    std::sort(q.ranks.begin(), q.ranks.end());
    q.ranks.erase(std::unique(q.ranks.begin(), q.ranks.end()), q.ranks.end());
    if (q.ranks == m_query.ranks && q.min_level == m_query.min_level && q.match == m_query.match) return;
    m_query = q;
    reset();
}

void LogTableModel::reset() {
    beginResetModel();
    ++m_generation;
    m_ready = false;
    m_count = 0;
    m_coveredId = 0;
    m_anchors.assign(1, 0);
    m_pages.clear();
    m_lru.clear();
    m_requested.clear();
    m_extending = false;
    m_extendAgain = false;
    endResetModel();
    if (m_run > 0) extend();
}

void LogTableModel::onLogsAdded(qint64 run) {
    if (run == m_run) extend();
}

void LogTableModel::extend() {
    if (!m_watcher || m_run <= 0) return;
    if (m_extending) {
        m_extendAgain = true;
        return;
    }
    m_extending = true;
    const quint64 generation = m_generation;
    const int64_t run = m_run;
    const LogQuery query = m_query;
    const int64_t covered = m_coveredId;
    const int64_t count = m_count;
    const int64_t lastAnchor = m_anchors.back(); // of page count / kPageRows
    m_watcher->read<Extension>(
        this,
        [run, query, covered, count, lastAnchor](const RunStore& store) {
            Extension ext;
            ext.coveredId = covered;
            for (int attempt = 0; attempt < kCountAttempts; ++attempt) {
                // The count covers exactly the lines up to the run's last id when that id is the
                // same before and after it (the supervisor appends with growing ids).
                const int64_t before = maxLogId(store, run);
                if (before <= covered) return ext;
                LogQuery q = query;
                q.after_id = covered;
                const int64_t added = store.logCount(run, q);
                if (maxLogId(store, run) != before) continue;
                ext.added = added;
                ext.coveredId = before;
                // The id before each page boundary in the new rows, found by skipping along the
                // index (the rows themselves are not read), so that any page is later one
                // keyset read.
                const int64_t page = kPageRows;
                int64_t boundary = (count / page + 1) * page;
                int64_t afterId = covered;
                int64_t afterRow = count; // the next matching row after afterId is this row
                for (; boundary <= count + added; boundary += page) {
                    LogQuery skip = query;
                    skip.after_id = afterId;
                    skip.offset = (boundary - 1) - afterRow;
                    skip.limit = 1;
                    const std::vector<LogRow> row = store.logs(run, skip);
                    if (row.empty()) break; // cannot happen while ids grow; stop cleanly
                    afterId = row.front().id;
                    afterRow = boundary;
                    ext.anchors.push_back(afterId);
                }
                const int64_t total = count + added;
                if (added > 0 && static_cast<int64_t>(ext.anchors.size()) == total / page - count / page) {
                    ext.tailPage = (total - 1) / page;
                    const int64_t k = ext.tailPage - count / page; // 0: the old last page
                    LogQuery tail = query;
                    tail.after_id = k == 0 ? lastAnchor : ext.anchors[static_cast<size_t>(k - 1)];
                    tail.limit = total - ext.tailPage * page;
                    ext.tailRows = store.logs(run, tail);
                }
                return ext;
            }
            ext.settled = false;
            return ext;
        },
        [this, generation](Extension ext) { applyExtension(generation, ext); },
        [this, generation](const QString& message) {
            if (generation != m_generation) return;
            m_extending = false;
            m_ready = true;
            emit queryFailed(message);
        });
}

void LogTableModel::applyExtension(quint64 generation, const Extension& ext) {
    if (generation != m_generation) return;
    m_extending = false;
    if (!ext.settled) {
        QTimer::singleShot(kRetryDelayMs, this, [this] { extend(); });
        return;
    }
    const bool first = !m_ready;
    m_ready = true;
    const int64_t total = std::min<int64_t>(m_count + ext.added, INT_MAX);
    if (total > m_count) {
        beginInsertRows(QModelIndex(), static_cast<int>(m_count), static_cast<int>(total - 1));
        m_count = total;
        m_coveredId = ext.coveredId;
        m_anchors.insert(m_anchors.end(), ext.anchors.begin(), ext.anchors.end());
        endInsertRows();
        if (ext.tailPage >= 0) applyPage(generation, ext.tailPage, ext.tailRows);
    } else {
        m_coveredId = std::max(m_coveredId, ext.coveredId);
    }
    if (first || ext.added > 0) emit countChanged(static_cast<int>(m_count));
    if (m_extendAgain) {
        m_extendAgain = false;
        extend();
    }
}

void LogTableModel::requestPage(int64_t page) const {
    auto* self = const_cast<LogTableModel*>(this);
    if (!m_watcher || m_run <= 0 || m_requested.count(page)) return;
    const int64_t start = page * kPageRows;
    if (start >= m_count || page >= static_cast<int64_t>(m_anchors.size())) return;
    m_requested.insert(page);
    const quint64 generation = m_generation;
    const int64_t run = m_run;
    LogQuery q = m_query;
    q.after_id = m_anchors[static_cast<size_t>(page)];
    q.limit = std::min<int64_t>(kPageRows, m_count - start);
    m_watcher->read<std::vector<LogRow>>(
        self, [run, q](const RunStore& store) { return store.logs(run, q); },
        [self, generation, page](std::vector<LogRow> rows) {
            self->applyPage(generation, page, std::move(rows));
        },
        [self, generation, page](const QString& message) {
            if (generation != self->m_generation) return;
            self->m_requested.erase(page);
            emit self->queryFailed(message);
        });
}

void LogTableModel::applyPage(quint64 generation, int64_t page, std::vector<LogRow> rows) {
    if (generation != m_generation) return;
    m_requested.erase(page);
    auto it = m_pages.find(page);
    // Rows never change within a generation, so a page read before more lines arrived (an
    // older request answered late) must not replace a fuller copy.
    if (it != m_pages.end() && it->second.rows.size() >= rows.size()) return;
    if (it != m_pages.end()) {
        m_lru.erase(it->second.lru);
    } else {
        it = m_pages.emplace(page, Page()).first;
    }
    m_lru.push_front(page);
    it->second.lru = m_lru.begin();
    const int64_t start = page * kPageRows;
    const int64_t loaded = std::min<int64_t>(static_cast<int64_t>(rows.size()), m_count - start);
    it->second.rows = std::move(rows);
    while (m_pages.size() > static_cast<size_t>(kMaxCachedPages)) {
        m_pages.erase(m_lru.back());
        m_lru.pop_back();
    }
    if (loaded <= 0) return;
    const int first = static_cast<int>(start);
    const int last = static_cast<int>(start + loaded - 1);
    emit dataChanged(index(first, 0), index(last, ColumnCount - 1));
    emit pageLoaded(first, last);
}

const LogRow* LogTableModel::loadedRow(int row) const {
    const int64_t page = row / kPageRows;
    auto it = m_pages.find(page);
    if (it == m_pages.end()) return nullptr;
    const size_t i = static_cast<size_t>(row - page * kPageRows);
    if (i >= it->second.rows.size()) return nullptr;
    if (it->second.lru != m_lru.begin()) m_lru.splice(m_lru.begin(), m_lru, it->second.lru);
    return &it->second.rows[i];
}

bool LogTableModel::isLoaded(int row) const {
    return row >= 0 && row < m_count && loadedRow(row) != nullptr;
}

std::optional<LogRow> LogTableModel::rowAt(int row) const {
    if (row < 0 || row >= m_count) return std::nullopt;
    if (const LogRow* r = loadedRow(row)) return *r;
    return std::nullopt;
}

void LogTableModel::findFirst(const QString& level) {
    if (!m_watcher || m_run <= 0) {
        emit firstFound(-1);
        return;
    }
    const quint64 generation = m_generation;
    const int64_t run = m_run;
    const LogQuery query = m_query;
    const int64_t covered = m_coveredId;
    const std::vector<int64_t> anchors = m_anchors;
    std::string wanted = level.toStdString();
    if (LogLevel::fromNameStrict(query.min_level) > LogLevel::fromNameStrict(wanted)) {
        wanted = query.min_level;
    }
    m_watcher->read<int64_t>(
        this,
        [run, query, covered, anchors, wanted](const RunStore& store) -> int64_t {
            LogQuery first = query;
            first.min_level = wanted;
            first.limit = 1;
            const std::vector<LogRow> hit = store.logs(run, first);
            if (hit.empty() || hit.front().id > covered) return -1;
            const int64_t id = hit.front().id;
            // Its page is the last one whose preceding id is below it.
            const auto it = std::lower_bound(anchors.begin(), anchors.end(), id);
            const int64_t page = static_cast<int64_t>(it - anchors.begin()) - 1;
            if (page < 0) return -1;
            LogQuery rows = query;
            rows.after_id = anchors[static_cast<size_t>(page)];
            rows.limit = kPageRows;
            const std::vector<LogRow> pageRows = store.logs(run, rows);
            for (size_t i = 0; i < pageRows.size(); ++i) {
                if (pageRows[i].id == id) return page * kPageRows + static_cast<int64_t>(i);
            }
            return -1;
        },
        [this, generation](int64_t row) {
            if (generation != m_generation) return;
            emit firstFound(row < m_count ? static_cast<int>(row) : -1);
        },
        [this, generation](const QString& message) {
            if (generation != m_generation) return;
            emit queryFailed(message);
            emit firstFound(-1);
        });
}

int LogTableModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(m_count);
}

int LogTableModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

QColor LogTableModel::levelColor(const QString& level) {
    if (level == QLatin1String("error")) return QColor(0xd3, 0x2f, 0x2f);
    if (level == QLatin1String("warn")) return QColor(0xc7, 0x7c, 0x02);
    if (level == QLatin1String("debug")) return QColor(0x80, 0x80, 0x80);
    return QColor();
}

QString LogTableModel::messageText(const LogRow& row) {
    QString text = QString::fromStdString(row.message);
    // The store's line for a run_end reads "run ended: failed at step 0: why" when the worker did
    // not know the step (it sends 0 for failures): a step the run may be far past. Say none.
    static const QRegularExpression unknownStep(QStringLiteral("^(run ended: \\S+) at step 0(?=:|$)"));
    if (row.stream == "telemetry") text.replace(unknownStep, QStringLiteral("\\1"));
    return text;
}

QVariant LogTableModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) {
        return QVariant();
    }
    const LogRow* r = loadedRow(index.row());
    if (!r) {
        requestPage(index.row() / kPageRows);
        if (role == LoadedRole) return false;
        return QVariant();
    }
    switch (role) {
    case Qt::DisplayRole:
        switch (index.column()) {
        case TimeColumn:
            return QDateTime::fromMSecsSinceEpoch(static_cast<qint64>(r->t * 1000.0))
                .toString(QStringLiteral("HH:mm:ss.zzz"));
        case HostColumn:
            // A line stored before the run knew its ranks' hosts has none of its own.
            return r->host.empty() ? hostOfRank(r->rank) : QString::fromStdString(r->host);
        case RankColumn:
            return r->rank < 0 ? QStringLiteral("-") : QString::number(r->rank);
        case LevelColumn:
            return levelText(r->level);
        case MessageColumn:
            return messageText(*r);
        }
        return QVariant();
    case Qt::ToolTipRole:
        if (index.column() == TimeColumn) {
            return QDateTime::fromMSecsSinceEpoch(static_cast<qint64>(r->t * 1000.0))
                .toString(Qt::ISODateWithMs);
        }
        if (index.column() == MessageColumn) return messageText(*r);
        if (index.column() == RankColumn && r->rank < 0) {
            return tr("The supervisor or the launcher (%1)").arg(QString::fromStdString(r->stream));
        }
        return QVariant();
    case Qt::ForegroundRole: {
        if (index.column() != LevelColumn && index.column() != MessageColumn) return QVariant();
        const QColor c = levelColor(levelText(r->level));
        return c.isValid() ? QVariant(c) : QVariant();
    }
    case Qt::TextAlignmentRole:
        if (index.column() == RankColumn) return QVariant(Qt::AlignRight | Qt::AlignVCenter);
        return QVariant();
    case LogIdRole:
        return QVariant::fromValue<qint64>(r->id);
    case LevelRole:
        return levelText(r->level);
    case RankNumberRole:
        return r->rank;
    case StreamRole:
        return QString::fromStdString(r->stream);
    case LoadedRole:
        return true;
    }
    return QVariant();
}

QVariant LogTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return QVariant();
    switch (section) {
    case TimeColumn:
        return tr("Time");
    case HostColumn:
        return tr("Host");
    case RankColumn:
        return tr("Rank");
    case LevelColumn:
        return tr("Level");
    case MessageColumn:
        return tr("Message");
    }
    return QVariant();
}

} // namespace parallax
