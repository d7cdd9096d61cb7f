#include "ui/models/DeviceGridModel.h"

#include <QColor>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

namespace parallax {

namespace {

bool known(double v) { return std::isfinite(v) && v >= 0; }

// Cool (idle) to warm (busy): an idle GPU should stand out at a glance.
QColor utilizationColor(double pct, double full) {
    if (!known(pct)) return QColor(0xe0, 0xe0, 0xe0);
    const double f = std::clamp(pct / full, 0.0, 1.0);
    return QColor::fromHsvF(0.62 - 0.62 * f, 0.25 + 0.45 * f, 0.97);
}

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
    if (s.state == "silent" && detail.startsWith(QLatin1String("silent"))) {
        const qsizetype paren = detail.indexOf(QLatin1String(" ("));
        return paren > 0 ? detail.left(paren) : detail;
    }
    return QString::fromStdString(s.state);
}

} // namespace

DeviceGridModel::DeviceGridModel(QObject* parent) : QAbstractTableModel(parent) {}

void DeviceGridModel::clear() {
    beginResetModel();
    resetSamples();
    m_rankHosts.clear();
    m_hostStatuses.clear();
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
    endResetModel();
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
    if (s.state == "silent" && detail.startsWith(QLatin1String("silent"))) return host + QLatin1Char(' ') + detail;
    return detail.isEmpty() ? QStringLiteral("%1 %2").arg(host, QString::fromStdString(s.state))
                            : QStringLiteral("%1 %2 (%3)").arg(host, QString::fromStdString(s.state), detail);
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

        auto hi = m_historyIndex.find(e.rank);
        if (hi == m_historyIndex.end()) {
            History h;
            h.rank = e.rank;
            hi = m_historyIndex.emplace(e.rank, m_histories.size()).first;
            m_histories.push_back(std::move(h));
        }
        History& h = m_histories[hi->second];
        if (h.t.empty() || e.t > h.t.back()) {
            h.t.push_back(e.t);
            h.util.push_back(utilizationOf(e));
        }
    }
    if (newRank) {
        std::sort(m_histories.begin(), m_histories.end(),
                  [](const History& a, const History& b) { return a.rank < b.rank; });
        for (size_t i = 0; i < m_histories.size(); ++i) m_historyIndex[m_histories[i].rank] = i;
    }
    for (History& h : m_histories) {
        const DeviceEvent& e = m_latest[h.rank];
        h.label = e.device >= 0 ? QStringLiteral("r%1 %2:%3").arg(h.rank).arg(QString::fromStdString(e.host)).arg(e.device)
                                : QStringLiteral("r%1 %2").arg(h.rank).arg(QString::fromStdString(e.host));
    }
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
    // Staleness depends on the newest sample of all, so every cell may have changed.
    if (!m_grid.empty() && m_columns > 0) {
        emit dataChanged(index(0, 0), index(rowCount() - 1, m_columns - 1));
    }
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
    if (role == HostStateRole) return status ? QString::fromStdString(status->state) : QString();
    if (role == HostAlarmRole) return alarm;
    if (cell.rank < 0) return role == RankRole ? QVariant(-1) : QVariant();
    if (role == HasSampleRole) return cell.hasSample;
    if (!cell.hasSample) {
        const QString host = m_hosts[index.row()];
        switch (role) {
        case Qt::DisplayRole: return tr("r%1\nno sample yet").arg(cell.rank);
        case Qt::ToolTipRole:
            return tr("rank %1 on %2: no device sample yet").arg(cell.rank).arg(host) +
                   (alarm ? QLatin1Char('\n') + hostStatusText(*status) : QString());
        case Qt::BackgroundRole: return QColor(0xee, 0xee, 0xee);
        case RankRole: return cell.rank;
        case StaleRole: return false;
        }
        return QVariant();
    }
    const DeviceEvent& e = cell.sample;
    const bool gpu = e.device >= 0;
    const double util = utilizationOf(e);
    const bool stale = m_lastT - e.t > kStaleSeconds;
    switch (role) {
    case Qt::DisplayRole: {
        QString head = gpu ? QStringLiteral("r%1 · GPU %2").arg(cell.rank).arg(e.device)
                           : QStringLiteral("r%1 · CPU").arg(cell.rank);
        if (stale) head += tr(" · no sample for %1 s").arg(static_cast<int>(m_lastT - e.t));
        QString body;
        if (gpu) {
            body = (known(util) ? QString::number(util, 'f', 0) + QLatin1Char('%') : QStringLiteral("?%")) +
                   QStringLiteral(" · ") + formatBytes(e.mem_used) + QLatin1Char('/') + formatBytes(e.mem_total);
            if (known(e.temp_c)) body += QStringLiteral(" · %1°C").arg(e.temp_c, 0, 'f', 0);
        } else {
            body = (known(util) ? QString::number(util, 'f', 0) + QLatin1Char('%') : QStringLiteral("?%")) +
                   QStringLiteral(" CPU · RSS ") + formatBytes(e.rss);
        }
        return head + QLatin1Char('\n') + body;
    }
    case Qt::ToolTipRole: {
        QString t = tr("rank %1 on %2").arg(cell.rank).arg(QString::fromStdString(e.host));
        if (gpu) {
            t += tr("\nGPU %1: %2% busy\nmemory %3 of %4").arg(e.device).arg(util, 0, 'f', 0)
                     .arg(formatBytes(e.mem_used), formatBytes(e.mem_total));
            if (known(e.temp_c)) t += tr("\n%1 °C").arg(e.temp_c, 0, 'f', 0);
            if (known(e.power_w)) t += tr("\n%1 W").arg(e.power_w, 0, 'f', 0);
            if (known(e.sm_clock_mhz)) t += tr("\nSM clock %1 MHz").arg(e.sm_clock_mhz, 0, 'f', 0);
        } else {
            t += tr("\nprocess CPU %1% (100% = one core)\nRSS %2").arg(util, 0, 'f', 0).arg(formatBytes(e.rss));
        }
        if (stale) t += tr("\nno sample for %1 s: is the rank hung?").arg(m_lastT - e.t, 0, 'f', 0);
        if (alarm) t += QLatin1Char('\n') + hostStatusText(*status);
        return t;
    }
    case Qt::BackgroundRole:
        if (stale) return QColor(0xbd, 0xbd, 0xbd);
        // 100% is a busy GPU, or one busy core for a CPU rank.
        return utilizationColor(util, 100.0);
    case RankRole:
        return cell.rank;
    case IsGpuRole:
        return gpu;
    case UtilizationRole:
        return util;
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
    if (role != Qt::DisplayRole) return QVariant();
    return m_gpu ? tr("GPU %1").arg(section) : tr("process %1").arg(section);
}

} // namespace parallax
