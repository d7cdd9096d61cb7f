#include "ui/models/DeviceGridModel.h"

#include <QColor>

#include <algorithm>
#include <cmath>
#include <limits>

namespace parallax {

namespace {

bool known(double v) { return std::isfinite(v) && v >= 0; }

// Cool (idle) to warm (busy): an idle GPU should stand out at a glance.
QColor utilizationColor(double pct, double full) {
    if (!known(pct)) return QColor(0xe0, 0xe0, 0xe0);
    const double f = std::clamp(pct / full, 0.0, 1.0);
    return QColor::fromHsvF(0.62 - 0.62 * f, 0.25 + 0.45 * f, 0.97);
}

} // namespace

DeviceGridModel::DeviceGridModel(QObject* parent) : QAbstractTableModel(parent) {}

void DeviceGridModel::clear() {
    beginResetModel();
    m_gpu = false;
    m_latest.clear();
    m_historyIndex.clear();
    m_histories.clear();
    m_hosts.clear();
    m_grid.clear();
    m_columns = 0;
    m_firstT = 0;
    m_lastT = 0;
    endResetModel();
}

double DeviceGridModel::utilizationOf(const DeviceEvent& e) {
    if (e.device >= 0) return known(e.util) ? e.util : std::numeric_limits<double>::quiet_NaN();
    return known(e.cpu_pct) ? e.cpu_pct : std::numeric_limits<double>::quiet_NaN();
}

void DeviceGridModel::addSamples(const std::vector<DeviceEvent>& samples, bool reset) {
    if (reset) clear();
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
            if (c.rank >= 0) c.sample = m_latest[c.rank];
        }
    }
    // Staleness depends on the newest sample of all, so every cell may have changed.
    if (!m_grid.empty() && m_columns > 0) {
        emit dataChanged(index(0, 0), index(rowCount() - 1, m_columns - 1));
    }
}

void DeviceGridModel::rebuildLayout() {
    // Hosts in order of their lowest rank; ranks of a host by rank.
    std::vector<std::pair<std::string, std::vector<int>>> hosts;
    for (const auto& [rank, e] : m_latest) {
        auto it = std::find_if(hosts.begin(), hosts.end(), [&](const auto& h) { return h.first == e.host; });
        if (it == hosts.end()) {
            hosts.emplace_back(e.host, std::vector<int>{rank});
        } else {
            it->second.push_back(rank);
        }
    }
    m_hosts.clear();
    m_grid.clear();
    m_columns = 0;
    for (const auto& [host, ranks] : hosts) {
        m_hosts.push_back(QString::fromStdString(host));
        std::vector<Cell> row;
        for (size_t i = 0; i < ranks.size(); ++i) {
            const DeviceEvent& e = m_latest[ranks[i]];
            size_t slot = e.device >= 0 ? static_cast<size_t>(e.device) : i;
            // Two ranks sharing a GPU index (oversubscribed) each still get a tile.
            while (slot < row.size() && row[slot].rank >= 0) ++slot;
            if (row.size() <= slot) row.resize(slot + 1);
            row[slot].rank = ranks[i];
            row[slot].sample = e;
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
    if (cell.rank < 0) return role == RankRole ? QVariant(-1) : QVariant();
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
    if (role != Qt::DisplayRole) return QVariant();
    if (orientation == Qt::Vertical) {
        return section >= 0 && section < m_hosts.size() ? QVariant(m_hosts[section]) : QVariant();
    }
    return m_gpu ? tr("GPU %1").arg(section) : tr("process %1").arg(section);
}

} // namespace parallax
