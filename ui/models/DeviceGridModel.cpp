#include "ui/models/DeviceGridModel.h"

#include "ui/models/RankActivityPalette.h"

#include <QColor>
#include <QRegularExpression>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

namespace parallax {

namespace {

// Halves a history past its bound: pairs of neighbours become one entry at the first one's place
// with the mean value (a value that is not a number gives way to the other), the newest alone.
template <class X, class V>
void mergePairs(std::vector<X>& at, std::vector<V>& values) {
    size_t out = 0;
    for (size_t i = 0; i + 1 < at.size(); i += 2, ++out) {
        const V a = values[i], b = values[i + 1];
        at[out] = at[i];
        values[out] = std::isnan(a) ? b : std::isnan(b) ? a : (a + b) / 2;
    }
    if (at.size() % 2) {
        at[out] = at.back();
        values[out] = values.back();
        ++out;
    }
    at.resize(out);
    values.resize(out);
}

// Puts `olderAt`/`olderValues` (in order, all before the history's first entry) before a history,
// then halves it (mergePairs) until it is within `bound`.
template <class X, class V>
void prepend(std::vector<X>& at, std::vector<V>& values, std::vector<X> olderAt, std::vector<V> olderValues,
             size_t bound) {
    olderAt.insert(olderAt.end(), at.begin(), at.end());
    olderValues.insert(olderValues.end(), values.begin(), values.end());
    at = std::move(olderAt);
    values = std::move(olderValues);
    while (at.size() > bound) mergePairs(at, values);
}

bool known(double v) { return std::isfinite(v) && v >= 0; }

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The history of `rank` in `histories` (kept in rank order by the caller), made when missing.
template <typename History>
History& historyOf(std::map<int, size_t>& index, std::vector<History>& histories, int rank, bool& added) {
    auto it = index.find(rank);
    if (it == index.end()) {
        History h;
        h.rank = rank;
        it = index.emplace(rank, histories.size()).first;
        histories.push_back(std::move(h));
        added = true;
    }
    return histories[it->second];
}

QString percent(double share) { return QString::number(share * 100.0, 'f', 0) + QLatin1Char('%'); }

const QColor kAlarm(0xc6, 0x28, 0x28);

bool isAddress(const std::string& host) {
    return !host.empty() && host.find_first_not_of("0123456789.") == std::string::npos;
}

// The same machine: the same name, or the same name up to the domain (a profile may say
// "node2.cluster.local" where the worker reports "node2"); addresses only when equal.
bool sameHost(const std::string& a, const std::string& b) {
    if (a == b) return true;
    if (isAddress(a) || isAddress(b)) return false;
    return a.substr(0, a.find('.')) == b.substr(0, b.find('.'));
}

// What the row header says under the host's name: "silent for 12 s", or the state.
QString shortStatus(const HostStatus& s) {
    const QString detail = QString::fromStdString(s.detail);
    if (s.state == HostState::Silent && detail.startsWith(QLatin1String("silent"))) {
        const qsizetype paren = detail.indexOf(QLatin1String(" ("));
        return paren > 0 ? detail.left(paren) : detail;
    }
    return QString::fromLatin1(hostStateName(s.state));
}

} // namespace

DeviceGridModel::DeviceGridModel(QObject* parent) : QAbstractTableModel(parent) {}

double DeviceGridModel::Activity::computeShare() const {
    const double total = computeMs + waitMs;
    return total > 0 ? computeMs / total : kNaN;
}

double DeviceGridModel::Activity::waitShare() const {
    const double total = computeMs + waitMs;
    return total > 0 ? waitMs / total : kNaN;
}

void DeviceGridModel::clear() {
    beginResetModel();
    resetSamples();
    m_rankHosts.clear();
    m_hostStatuses.clear();
    m_recentSteps.clear();
    m_stepHistoryIndex.clear();
    m_stepHistories.clear();
    m_alerted.clear();
    m_ended = false;
    rebuildLayout();
    endResetModel();
}

void DeviceGridModel::resetSamples() {
    m_gpu = false;
    m_latest.clear();
    m_historyIndex.clear();
    m_histories.clear();
    m_firstT = 0;
    m_lastT = 0;
}

void DeviceGridModel::setRankHosts(const std::vector<std::string>& hosts) {
    if (hosts == m_rankHosts) return;
    beginResetModel();
    m_rankHosts = hosts;
    rebuildLayout();
    relabelStepHistories();
    endResetModel();
}

void DeviceGridModel::cellsChanged() {
    if (!m_grid.empty() && m_columns > 0) emit dataChanged(index(0, 0), index(rowCount() - 1, m_columns - 1));
}

QString DeviceGridModel::rankLabel(int rank) const {
    const auto it = m_latest.find(rank);
    if (it != m_latest.end()) {
        const DeviceEvent& e = it->second;
        return e.device >= 0 ? QStringLiteral("r%1 %2:%3").arg(rank).arg(QString::fromStdString(e.host)).arg(e.device)
                             : QStringLiteral("r%1 %2").arg(rank).arg(QString::fromStdString(e.host));
    }
    if (rank >= 0 && static_cast<size_t>(rank) < m_rankHosts.size())
        return QStringLiteral("r%1 %2").arg(rank).arg(QString::fromStdString(m_rankHosts[static_cast<size_t>(rank)]));
    return QStringLiteral("r%1").arg(rank);
}

void DeviceGridModel::relabelStepHistories() {
    for (StepHistory& h : m_stepHistories) h.label = rankLabel(h.rank);
}

void DeviceGridModel::addRankSteps(const std::vector<RankStepEvent>& rows, bool reset) {
    if (reset) {
        m_recentSteps.clear();
        m_stepHistoryIndex.clear();
        m_stepHistories.clear();
    }
    bool newRank = false;
    for (const RankStepEvent& e : rows) {
        std::vector<RankStepEvent>& recent = m_recentSteps[e.rank];
        // A step written again replaces the earlier row.
        if (!recent.empty() && e.step <= recent.back().step) {
            for (RankStepEvent& r : recent)
                if (r.step == e.step) r = e;
        } else {
            recent.push_back(e);
            if (recent.size() > kActivitySteps) recent.erase(recent.begin());
        }
        StepHistory& h = historyOf(m_stepHistoryIndex, m_stepHistories, e.rank, newRank);
        const double total = e.compute_ms + e.wait_ms;
        const float share = total > 0 ? static_cast<float>(e.compute_ms / total) : std::numeric_limits<float>::quiet_NaN();
        if (!h.steps.empty() && e.step <= h.steps.back()) {
            const auto at = std::lower_bound(h.steps.begin(), h.steps.end(), e.step);
            if (at != h.steps.end() && *at == e.step) h.computeShare[static_cast<size_t>(at - h.steps.begin())] = share;
            continue;
        }
        h.steps.push_back(e.step);
        h.computeShare.push_back(share);
        if (h.steps.size() > kMaxStepHistory) mergePairs(h.steps, h.computeShare);
    }
    if (newRank) {
        std::sort(m_stepHistories.begin(), m_stepHistories.end(),
                  [](const StepHistory& a, const StepHistory& b) { return a.rank < b.rank; });
        for (size_t i = 0; i < m_stepHistories.size(); ++i) m_stepHistoryIndex[m_stepHistories[i].rank] = i;
        relabelStepHistories();
    }
    if (reset && rows.empty()) {
        beginResetModel();
        endResetModel();
        return;
    }
    cellsChanged();
}

void DeviceGridModel::addOlderSamples(const std::vector<DeviceEvent>& samples) {
    // Each rank's rows before the oldest it holds, in time order.
    std::map<int, std::pair<std::vector<double>, std::vector<double>>> older;
    bool newRank = false;
    for (const DeviceEvent& e : samples) {
        const auto held = m_historyIndex.find(e.rank);
        if (held != m_historyIndex.end() && !m_histories[held->second].t.empty() &&
            e.t >= m_histories[held->second].t.front())
            continue;
        auto& [t, util] = older[e.rank];
        if (!t.empty() && e.t <= t.back()) continue;
        t.push_back(e.t);
        util.push_back(utilizationOf(e));
        if (e.device >= 0) m_gpu = true;
        if (m_firstT == 0 || e.t < m_firstT) m_firstT = e.t;
        m_lastT = std::max(m_lastT, e.t);
        // A rank that stopped sampling before the rows held gets a cell with its last sample.
        const auto [latest, added] = m_latest.try_emplace(e.rank, e);
        if (!added && e.t > latest->second.t) latest->second = e;
        newRank = newRank || added;
    }
    for (auto& [rank, rows] : older) {
        bool added = false;
        History& h = historyOf(m_historyIndex, m_histories, rank, added);
        prepend(h.t, h.util, std::move(rows.first), std::move(rows.second), kMaxTimeHistory);
    }
    if (newRank) {
        std::sort(m_histories.begin(), m_histories.end(),
                  [](const History& a, const History& b) { return a.rank < b.rank; });
        for (size_t i = 0; i < m_histories.size(); ++i) m_historyIndex[m_histories[i].rank] = i;
        for (History& h : m_histories) h.label = rankLabel(h.rank);
        beginResetModel();
        rebuildLayout();
        endResetModel();
    }
    olderRowsAdded(newRank);
}

void DeviceGridModel::addOlderRankSteps(const std::vector<RankStepEvent>& rows) {
    std::map<int, std::pair<std::vector<int64_t>, std::vector<float>>> older;
    for (const RankStepEvent& e : rows) {
        const auto held = m_stepHistoryIndex.find(e.rank);
        if (held != m_stepHistoryIndex.end() && !m_stepHistories[held->second].steps.empty() &&
            e.step >= m_stepHistories[held->second].steps.front())
            continue;
        auto& [steps, shares] = older[e.rank];
        if (!steps.empty() && e.step <= steps.back()) continue;
        const double total = e.compute_ms + e.wait_ms;
        steps.push_back(e.step);
        shares.push_back(total > 0 ? static_cast<float>(e.compute_ms / total) : std::numeric_limits<float>::quiet_NaN());
    }
    bool newRank = false;
    for (auto& [rank, steps] : older) {
        StepHistory& h = historyOf(m_stepHistoryIndex, m_stepHistories, rank, newRank);
        prepend(h.steps, h.computeShare, std::move(steps.first), std::move(steps.second), kMaxStepHistory);
    }
    olderRowsAdded(newRank);
}

void DeviceGridModel::olderRowsAdded(bool newRank) {
    if (newRank) {
        std::sort(m_stepHistories.begin(), m_stepHistories.end(),
                  [](const StepHistory& a, const StepHistory& b) { return a.rank < b.rank; });
        for (size_t i = 0; i < m_stepHistories.size(); ++i) m_stepHistoryIndex[m_stepHistories[i].rank] = i;
        relabelStepHistories();
    }
    // The heat map follows the model's resets and data changes; a grid without cells has no data.
    if (m_grid.empty() || m_columns == 0) {
        beginResetModel();
        endResetModel();
    } else {
        cellsChanged();
    }
}

std::optional<int64_t> DeviceGridModel::firstStep() const {
    std::optional<int64_t> first;
    for (const StepHistory& h : m_stepHistories)
        if (!h.steps.empty() && (!first || h.steps.front() < *first)) first = h.steps.front();
    return first;
}

std::optional<DeviceGridModel::Activity> DeviceGridModel::activity(int rank) const {
    const auto it = m_recentSteps.find(rank);
    if (it == m_recentSteps.end() || it->second.empty()) return std::nullopt;
    Activity a;
    for (const RankStepEvent& e : it->second) {
        if (!std::isfinite(e.compute_ms) || !std::isfinite(e.wait_ms)) continue;
        a.computeMs += std::max(0.0, e.compute_ms);
        a.waitMs += std::max(0.0, e.wait_ms);
        ++a.steps;
    }
    if (a.steps == 0) return std::nullopt;
    a.computeMs /= a.steps;
    a.waitMs /= a.steps;
    return a;
}

void DeviceGridModel::setAlerts(const std::vector<RunAlert>& alerts) {
    std::map<int, QStringList> alerted;
    for (const RunAlert& a : alerts) {
        if (!a.active) continue;
        for (int rank : a.ranks)
            alerted[rank] << QString::fromLatin1(alertKindName(a.kind)) + QStringLiteral(": ") +
                                 QString::fromStdString(a.message);
    }
    if (alerted == m_alerted) return;
    m_alerted = std::move(alerted);
    if (!reorderRows()) cellsChanged();
}

bool DeviceGridModel::isFlagged(int rank) const {
    if (isAlerted(rank)) return true;
    const auto it = m_latest.find(rank);
    return it != m_latest.end() && isStale(it->second);
}

std::vector<size_t> DeviceGridModel::rowOrder() const {
    struct Key {
        bool flagged = false;
        int lowest = std::numeric_limits<int>::max();
    };
    std::vector<Key> keys(m_grid.size());
    for (size_t r = 0; r < m_grid.size(); ++r) {
        for (const Cell& c : m_grid[r]) {
            if (c.rank < 0) continue;
            keys[r].lowest = std::min(keys[r].lowest, c.rank);
            keys[r].flagged = keys[r].flagged || isFlagged(c.rank);
        }
    }
    std::vector<size_t> order(m_grid.size());
    for (size_t r = 0; r < order.size(); ++r) order[r] = r;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        if (keys[a].flagged != keys[b].flagged) return keys[a].flagged;
        return keys[a].lowest < keys[b].lowest;
    });
    return order;
}

void DeviceGridModel::sortRows() {
    const std::vector<size_t> order = rowOrder();
    QStringList hosts;
    std::vector<std::vector<Cell>> grid;
    grid.reserve(order.size());
    for (size_t r : order) {
        hosts.push_back(m_hosts[static_cast<qsizetype>(r)]);
        grid.push_back(std::move(m_grid[r]));
    }
    m_hosts = std::move(hosts);
    m_grid = std::move(grid);
}

bool DeviceGridModel::reorderRows() {
    const std::vector<size_t> order = rowOrder();
    for (size_t r = 0; r < order.size(); ++r) {
        if (order[r] != r) {
            beginResetModel();
            sortRows();
            endResetModel();
            return true;
        }
    }
    return false;
}

void DeviceGridModel::setCpuThreadsPerRank(int threads) {
    threads = std::max(1, threads);
    if (threads == m_cpuThreads) return;
    m_cpuThreads = threads;
    cellsChanged();
}

void DeviceGridModel::setRunEnded(bool ended) {
    if (ended == m_ended) return;
    m_ended = ended;
    cellsChanged();
}

double DeviceGridModel::busyShare(const DeviceEvent& e) const {
    const double util = utilizationOf(e);
    if (!std::isfinite(util)) return kNaN;
    // A GPU is busy at 100%; a CPU rank at 100% per thread it computes with.
    return std::clamp(util / (e.device >= 0 ? 100.0 : 100.0 * m_cpuThreads), 0.0, 1.0);
}

void DeviceGridModel::setHostStatuses(const std::vector<HostStatus>& statuses) {
    m_hostStatuses = statuses;
    if (m_grid.empty()) return;
    emit headerDataChanged(Qt::Vertical, 0, rowCount() - 1);
    if (m_columns > 0) emit dataChanged(index(0, 0), index(rowCount() - 1, m_columns - 1));
}

const HostStatus* DeviceGridModel::hostStatus(int row) const {
    if (row < 0 || row >= m_hosts.size()) return nullptr;
    const std::string host = m_hosts[row].toStdString();
    for (const HostStatus& s : m_hostStatuses)
        if (s.host == host) return &s;
    for (const HostStatus& s : m_hostStatuses)
        if (sameHost(s.host, host)) return &s;
    return nullptr;
}

QString DeviceGridModel::hostStatusText(const HostStatus& s) {
    const QString host = QString::fromStdString(s.host);
    const QString detail = QString::fromStdString(s.detail);
    if (s.state == HostState::Silent && detail.startsWith(QLatin1String("silent")))
        return host + QLatin1Char(' ') + detail;
    const QString state = QString::fromLatin1(hostStateName(s.state));
    return detail.isEmpty() ? QStringLiteral("%1 %2").arg(host, state) : QStringLiteral("%1 %2 (%3)").arg(host, state, detail);
}

double DeviceGridModel::utilizationOf(const DeviceEvent& e) {
    if (e.device >= 0) return known(e.util) ? e.util : std::numeric_limits<double>::quiet_NaN();
    return known(e.cpu_pct) ? e.cpu_pct : std::numeric_limits<double>::quiet_NaN();
}

void DeviceGridModel::addSamples(const std::vector<DeviceEvent>& samples, bool reset) {
    if (reset) {
        beginResetModel();
        resetSamples();
        rebuildLayout();
        endResetModel();
    }
    if (samples.empty()) return;
    bool shapeChanged = false;
    bool newRank = false;
    for (const DeviceEvent& e : samples) {
        auto it = m_latest.find(e.rank);
        if (it == m_latest.end()) {
            shapeChanged = newRank = true;
            m_latest.emplace(e.rank, e);
        } else {
            if (it->second.host != e.host || it->second.device != e.device) shapeChanged = true;
            if (e.t >= it->second.t) it->second = e;
        }
        if (e.device >= 0) m_gpu = true;
        if (m_firstT == 0 || e.t < m_firstT) m_firstT = e.t;
        m_lastT = std::max(m_lastT, e.t);

        bool added = false;
        History& h = historyOf(m_historyIndex, m_histories, e.rank, added);
        if (h.t.empty() || e.t > h.t.back()) {
            h.t.push_back(e.t);
            h.util.push_back(utilizationOf(e));
            if (h.t.size() > kMaxTimeHistory) mergePairs(h.t, h.util);
        }
    }
    if (newRank) {
        std::sort(m_histories.begin(), m_histories.end(),
                  [](const History& a, const History& b) { return a.rank < b.rank; });
        for (size_t i = 0; i < m_histories.size(); ++i) m_historyIndex[m_histories[i].rank] = i;
    }
    for (History& h : m_histories) h.label = rankLabel(h.rank);
    if (newRank) relabelStepHistories();
    if (shapeChanged) {
        beginResetModel();
        rebuildLayout();
        endResetModel();
        return;
    }
    for (auto& row : m_grid) {
        for (Cell& c : row) {
            if (c.rank >= 0 && c.hasSample) c.sample = m_latest[c.rank];
        }
    }
    // Staleness depends on the newest sample of all, so every cell may have changed, and a rank
    // that went stale (or sampled again) moves its host's row.
    if (!reorderRows()) cellsChanged();
}

void DeviceGridModel::rebuildLayout() {
    // Every rank that sampled or that run_start names; its host is the one its samples say.
    std::set<int> ranks;
    for (const auto& [rank, e] : m_latest) ranks.insert(rank);
    for (size_t r = 0; r < m_rankHosts.size(); ++r) ranks.insert(static_cast<int>(r));
    // Hosts in order of their lowest rank; ranks of a host by rank.
    std::vector<std::pair<std::string, std::vector<int>>> hosts;
    for (int rank : ranks) {
        const auto sampled = m_latest.find(rank);
        const std::string& host = sampled != m_latest.end() ? sampled->second.host : m_rankHosts[static_cast<size_t>(rank)];
        auto it = std::find_if(hosts.begin(), hosts.end(), [&](const auto& h) { return h.first == host; });
        if (it == hosts.end()) {
            hosts.emplace_back(host, std::vector<int>{rank});
        } else {
            it->second.push_back(rank);
        }
    }
    m_hosts.clear();
    m_grid.clear();
    m_columns = 0;
    for (const auto& [host, hostRanks] : hosts) {
        m_hosts.push_back(QString::fromStdString(host));
        std::vector<Cell> row;
        // Ranks that sampled take their device's slot; the others the first free one from their
        // position on the host.
        for (int pass = 0; pass < 2; ++pass) {
            for (size_t i = 0; i < hostRanks.size(); ++i) {
                const auto sampled = m_latest.find(hostRanks[i]);
                if ((sampled != m_latest.end()) != (pass == 0)) continue;
                size_t slot = sampled != m_latest.end() && sampled->second.device >= 0
                                  ? static_cast<size_t>(sampled->second.device) : i;
                // Two ranks sharing a GPU index (oversubscribed) each still get a tile.
                while (slot < row.size() && row[slot].rank >= 0) ++slot;
                if (row.size() <= slot) row.resize(slot + 1);
                row[slot].rank = hostRanks[i];
                row[slot].hasSample = sampled != m_latest.end();
                if (row[slot].hasSample) row[slot].sample = sampled->second;
            }
        }
        m_columns = std::max(m_columns, static_cast<int>(row.size()));
        m_grid.push_back(std::move(row));
    }
    for (auto& row : m_grid) row.resize(static_cast<size_t>(m_columns));
    sortRows();
}

std::optional<DeviceEvent> DeviceGridModel::latest(int rank) const {
    auto it = m_latest.find(rank);
    if (it == m_latest.end()) return std::nullopt;
    return it->second;
}

int DeviceGridModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(m_grid.size());
}

int DeviceGridModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : m_columns;
}

QString DeviceGridModel::formatBytes(double bytes) {
    if (!known(bytes)) return QStringLiteral("?");
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (bytes >= 1024 && u < 4) {
        bytes /= 1024;
        ++u;
    }
    return QString::number(bytes, 'f', bytes < 10 && u > 0 ? 1 : 0) + QLatin1Char(' ') + QLatin1String(units[u]);
}

QVariant DeviceGridModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) {
        return QVariant();
    }
    const Cell& cell = m_grid[static_cast<size_t>(index.row())][static_cast<size_t>(index.column())];
    const HostStatus* status = hostStatus(index.row());
    const bool alarm = status && isAlarm(*status);
    if (role == HostStateRole) return status ? QString::fromLatin1(hostStateName(status->state)) : QString();
    if (role == HostAlarmRole) return alarm;
    if (cell.rank < 0) return role == RankRole ? QVariant(-1) : QVariant();
    if (role == HasSampleRole) return cell.hasSample;
    if (role == RankRole) return cell.rank;
    const std::optional<Activity> act = activity(cell.rank);
    switch (role) {
    case ComputeShareRole: return act ? act->computeShare() : kNaN;
    case WaitShareRole: return act ? act->waitShare() : kNaN;
    case AlertRole: return isAlerted(cell.rank);
    case FlaggedRole: return isFlagged(cell.rank);
    }
    const HostStatus* alarmStatus = alarm ? status : nullptr;
    if (!cell.hasSample) return unsampledData(index.row(), cell, act, alarmStatus, role);
    switch (role) {
    case Qt::DisplayRole: return sampleText(cell, act);
    case Qt::ToolTipRole: return sampleToolTip(cell, act, alarmStatus);
    }
    return sampleData(cell, act, role);
}

// What the rank does, in the cell, when its steps say so: the compute share its colour stands for,
// as the heat map's scale beside the grid names it (the wait share and the times are in its tooltip).
QString DeviceGridModel::activityLine(const std::optional<Activity>& act) const {
    if (!act) return QString();
    return percent(act->computeShare());
}

// What the rank does, in its tooltip, when its steps say so.
QString DeviceGridModel::activityTip(const std::optional<Activity>& act) const {
    if (!act) return QString();
    return tr("\nper step over its last %1: computes %2 ms, waits %3 ms in collectives (%4 of its step)")
        .arg(act->steps)
        .arg(act->computeMs, 0, 'f', 1)
        .arg(act->waitMs, 0, 'f', 1)
        .arg(percent(act->waitShare()));
}

QString DeviceGridModel::alertKinds(int rank) const {
    const auto alert = m_alerted.find(rank);
    if (alert == m_alerted.end()) return QString();
    QStringList kinds;
    for (const QString& message : alert->second) {
        const QString kind = message.section(QStringLiteral(": "), 0, 0);
        if (!kinds.contains(kind)) kinds << kind;
    }
    return kinds.join(QStringLiteral(", "));
}

QString DeviceGridModel::alertTip(int rank) const {
    const auto alert = m_alerted.find(rank);
    return alert != m_alerted.end() ? QLatin1Char('\n') + alert->second.join(QLatin1Char('\n')) : QString();
}

// A rank known from run_start that has not sampled its device yet.
QVariant DeviceGridModel::unsampledData(int row, const Cell& cell, const std::optional<Activity>& act,
                                        const HostStatus* alarmStatus, int role) const {
    const QString host = m_hosts[row];
    switch (role) {
    case Qt::DisplayRole: {
        const QString kinds = alertKinds(cell.rank);
        return tr("r%1\nno sample").arg(cell.rank) + (act ? QLatin1Char('\n') + activityLine(act) : QString()) +
               (kinds.isEmpty() ? QString() : QLatin1Char('\n') + kinds);
    }
    case Qt::ToolTipRole:
        return tr("rank %1 on %2: no device sample yet").arg(cell.rank).arg(host) + activityTip(act) +
               alertTip(cell.rank) + (alarmStatus ? QLatin1Char('\n') + hostStatusText(*alarmStatus) : QString());
    case Qt::BackgroundRole:
        return act ? RankActivityPalette::color(act->computeShare()) : QColor(0xee, 0xee, 0xee);
    case ActivityShareRole: return act ? act->computeShare() : kNaN;
    case StaleRole: return false;
    }
    return QVariant();
}

bool DeviceGridModel::isStale(const DeviceEvent& e) const {
    return m_lastT - e.t > kStaleSeconds;
}

// The cell of a rank with a device sample, short enough for a narrow column: its rank, then why
// it is flagged (silent, the alerts naming it) or else the figure its colour stands for (its
// compute share, else its GPU's utilization, or a CPU rank's cores). The device, memory, temperature and the run's end are in
// the tooltip, the grey of an ended run's cells and the column's header.
QString DeviceGridModel::sampleText(const Cell& cell, const std::optional<Activity>& act) const {
    const DeviceEvent& e = cell.sample;
    const double util = utilizationOf(e);
    QString line;
    if (isStale(e)) {
        line = tr("silent %1 s").arg(static_cast<int>(m_lastT - e.t));
    } else if (act) {
        line = activityLine(act);
    } else if (e.device >= 0) {
        line = known(util) ? QString::number(util, 'f', 0) + QLatin1Char('%') : QStringLiteral("?%");
    } else {
        // In cores, not a percentage: a rank computing on one thread also runs MPI's and the
        // loader's threads, and "132%" of a 1-thread rank reads as a broken gauge.
        line = known(util) ? tr("%1 cores").arg(util / 100.0, 0, 'f', 1) : tr("? cores");
    }
    const QString kinds = alertKinds(cell.rank);
    return QStringLiteral("r%1\n").arg(cell.rank) + line + (kinds.isEmpty() ? QString() : QLatin1Char('\n') + kinds);
}

QString DeviceGridModel::sampleToolTip(const Cell& cell, const std::optional<Activity>& act,
                                       const HostStatus* alarmStatus) const {
    const DeviceEvent& e = cell.sample;
    const double util = utilizationOf(e);
    QString t = tr("rank %1 on %2").arg(cell.rank).arg(QString::fromStdString(e.host));
    t += activityTip(act);
    if (e.device >= 0) {
        t += tr("\nGPU %1: %2% busy\nmemory %3 of %4").arg(e.device).arg(util, 0, 'f', 0)
                 .arg(formatBytes(e.mem_used), formatBytes(e.mem_total));
        if (known(e.temp_c)) t += tr("\n%1 °C").arg(e.temp_c, 0, 'f', 0);
        if (known(e.power_w)) t += tr("\n%1 W").arg(e.power_w, 0, 'f', 0);
        if (known(e.sm_clock_mhz)) t += tr("\nSM clock %1 MHz").arg(e.sm_clock_mhz, 0, 'f', 0);
    } else {
        t += tr("\nprocess CPU %1% (100% = one core; %2 threads)\nRSS %3")
                 .arg(util, 0, 'f', 0)
                 .arg(m_cpuThreads)
                 .arg(formatBytes(e.rss));
    }
    if (act) t += tr("\n(a rank waiting in a collective may still show busy: it spins)");
    if (m_ended) t += tr("\nthe run has ended: these are its last figures");
    if (isStale(e))
        t += m_ended ? tr("\nits last sample came %1 s before the run's last one: did the rank hang?").arg(m_lastT - e.t, 0, 'f', 0)
                     : tr("\nno sample for %1 s: is the rank hung?").arg(m_lastT - e.t, 0, 'f', 0);
    t += alertTip(cell.rank);
    if (alarmStatus) t += QLatin1Char('\n') + hostStatusText(*alarmStatus);
    return t;
}

// The figures of a rank with a device sample, one per role, and its colour.
QVariant DeviceGridModel::sampleData(const Cell& cell, const std::optional<Activity>& act, int role) const {
    const DeviceEvent& e = cell.sample;
    const bool gpu = e.device >= 0;
    const bool stale = isStale(e);
    switch (role) {
    case Qt::BackgroundRole:
        if (stale || m_ended) return QColor(0xbd, 0xbd, 0xbd);
        // What the rank does when its steps say so; how busy its device is otherwise.
        return RankActivityPalette::color(act ? act->computeShare() : busyShare(e));
    case ActivityShareRole:
        return act ? act->computeShare() : busyShare(e);
    case IsGpuRole:
        return gpu;
    case UtilizationRole:
        return utilizationOf(e);
    case MemoryUsedRole:
        return gpu ? e.mem_used : e.rss;
    case MemoryTotalRole:
        return gpu ? e.mem_total : -1.0;
    case TemperatureRole:
        return known(e.temp_c) ? e.temp_c : -1.0;
    case PowerRole:
        return known(e.power_w) ? e.power_w : -1.0;
    case StaleRole:
        return stale;
    case DeviceLabelRole:
        return gpu ? QStringLiteral("GPU %1").arg(e.device) : QStringLiteral("CPU");
    }
    return QVariant();
}

QVariant DeviceGridModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation == Qt::Vertical) {
        if (section < 0 || section >= m_hosts.size()) return QVariant();
        const HostStatus* status = hostStatus(section);
        const bool alarm = status && isAlarm(*status);
        switch (role) {
        case Qt::DisplayRole: return alarm ? m_hosts[section] + QLatin1Char('\n') + shortStatus(*status) : m_hosts[section];
        case Qt::ToolTipRole:
            if (!status) return QVariant();
            if (alarm) return hostStatusText(*status);
            return status->latency_ms >= 0 ? tr("%1 answers (%2 ms)").arg(m_hosts[section]).arg(status->latency_ms, 0, 'f', 0)
                                           : tr("%1 answers").arg(m_hosts[section]);
        case Qt::ForegroundRole: return alarm ? QVariant(kAlarm) : QVariant();
        }
        return QVariant();
    }
    if (role == Qt::ToolTipRole) {
        return m_stepHistories.empty()
                   ? tr("Cell colour: how busy the device is (a GPU's utilization, a CPU rank's CPU over its %1), "
                        "blue idle to orange busy. A rank waiting in a collective may spin and look busy.")
                         .arg(m_cpuThreads == 1 ? tr("thread") : tr("%1 threads").arg(m_cpuThreads))
                   : tr("Cell colour: the share of its last %1 steps the rank computed (orange) rather than "
                        "waited in collectives for the others (blue)")
                         .arg(kActivitySteps);
    }
    if (role != Qt::DisplayRole) return QVariant();
    return m_gpu ? tr("GPU %1").arg(section) : tr("process %1").arg(section);
}

} // namespace parallax
